import type { V1PodDisruptionBudget } from '@kubernetes/client-node';
import type { CheckResult } from '../check-result.ts';
import { joinProblems, plural } from './format.ts';

const ID = 'disruption-budgets';

function nameOf(pdb: V1PodDisruptionBudget): string {
  return `${pdb.metadata?.namespace ?? 'default'}/${pdb.metadata?.name ?? '<unnamed>'}`;
}

function counts(pdb: V1PodDisruptionBudget): string {
  const s = pdb.status;
  return `disruptionsAllowed=${s?.disruptionsAllowed ?? '?'} (currentHealthy ${s?.currentHealthy ?? '?'} / desiredHealthy ${s?.desiredHealthy ?? '?'})`;
}

/**
 * Whether the status describes the current spec. The eviction API refuses evictions covered by
 * a budget whose status lags its spec, so a stale budget blocks a drain until the disruption
 * controller catches up.
 */
function staleness(pdb: V1PodDisruptionBudget): string | undefined {
  const generation = pdb.metadata?.generation;
  const observed = pdb.status?.observedGeneration;
  if (pdb.status === undefined) return 'no status yet';
  if (generation !== undefined && (observed === undefined || observed < generation)) {
    return `status is stale (observedGeneration ${observed ?? 'none'} < generation ${generation}): evictions wait for the disruption controller`;
  }
  return undefined;
}

/**
 * Whether critical workloads can tolerate a drain. Failed when a PodDisruptionBudget allows no
 * disruption while it expects pods (a drain would block on it); a stale status or a
 * `DisruptionAllowed` condition in SyncFailed is a warning. Evidence names each budget as
 * `PDB ns/name: disruptionsAllowed=0 (currentHealthy 1 / desiredHealthy 1)`.
 */
export function evaluateDisruptionBudgets(pdbs: V1PodDisruptionBudget[]): CheckResult {
  const title = 'PodDisruptionBudgets';
  const blocking: string[] = [];
  const notes: string[] = [];
  for (const pdb of pdbs) {
    const status = pdb.status;
    if (status?.disruptionsAllowed === 0 && (status.expectedPods ?? 0) > 0) {
      blocking.push(`PDB ${nameOf(pdb)}: ${counts(pdb)}`);
    }
    const stale = staleness(pdb);
    if (stale !== undefined) notes.push(`PDB ${nameOf(pdb)}: ${stale}`);
    const sync = status?.conditions?.find((c) => c.type === 'DisruptionAllowed' && c.reason === 'SyncFailed');
    if (sync !== undefined) notes.push(`PDB ${nameOf(pdb)}: SyncFailed${sync.message ? `: ${sync.message}` : ''}`);
  }
  const evidence = [...blocking, ...notes];
  if (blocking.length > 0) {
    const names = blocking.length === 1 ? 'a PodDisruptionBudget allows' : `${blocking.length} PodDisruptionBudgets allow`;
    return { id: ID, title, status: 'failed', summary: `${names} no disruption, so a drain would block: ${joinProblems(blocking)}`, evidence };
  }
  if (notes.length > 0) return { id: ID, title, status: 'warning', summary: joinProblems(notes), evidence };
  const summary = pdbs.length === 0 ? 'no PodDisruptionBudgets' : `${plural(pdbs.length, 'PodDisruptionBudget')}, all allow a disruption`;
  return { id: ID, title, status: 'passed', summary, evidence };
}
