/**
 * The invariants of an etcd restore rehearsal, judged from the simulator's recorder and the
 * operation as Redis holds it: one `bootstrap --recover-from` per operation whatever happened (a
 * crash, a Retry, a lost answer), and no reset before two distinct approvers other than the
 * requester and the starter approved it.
 */
import type { Operation } from '../../src/ops/operation.ts';
import type { SimEvent } from '../sim/index.ts';
import type { Violation } from './invariants.ts';

/** What one rehearsal run left behind. */
export interface RestoreEvidence {
  cluster: string;
  /** Simulator events of this run. */
  events: readonly SimEvent[];
  /** The operation as Redis holds it after the run; undefined when none was created or read. */
  op: Pick<Operation, 'id' | 'state' | 'requestedBy' | 'startedBy' | 'approvals'> | undefined;
  /** The run ended: the operation reached a final state the driver accepted. */
  ended: boolean;
}

/** Bootstrap requests with `--recover-from` that reached a node of the cluster, accepted or refused. */
export function recoverBootstraps(events: readonly SimEvent[], cluster: string): SimEvent[] {
  return events.filter((e) => e.cluster === cluster && e.kind === 'etcd-bootstrap' && (e.detail ?? '').startsWith('recover-from'));
}

export function checkRestoreInvariants(e: RestoreEvidence): Violation[] {
  const violations: Violation[] = [];
  const bootstraps = recoverBootstraps(e.events, e.cluster);
  if (bootstraps.length > 1) {
    violations.push({
      invariant: 'second-bootstrap-recover-from',
      detail: `${bootstraps.length} bootstrap --recover-from reached the nodes (${bootstraps.map((b) => `${b.node ?? '?'} at ${b.at}${b.error ? `: ${b.error}` : ''}`).join('; ')}); exactly one is allowed per operation`,
    });
  }
  if (e.op?.state === 'completed' && bootstraps.length !== 1) {
    violations.push({ invariant: 'second-bootstrap-recover-from', detail: `completed with ${bootstraps.length} bootstrap --recover-from` });
  }
  const resets = e.events.filter((ev) => ev.cluster === e.cluster && ev.kind === 'reset');
  if (resets.length > 0) {
    const barred = new Set([e.op?.requestedBy, e.op?.startedBy].filter((u): u is string => u !== undefined));
    // Every approval that let the resets go: two distinct approvers, neither the requester nor the starter, given before the first reset.
    const firstReset = Math.min(...resets.map((r) => r.at));
    const good = (e.op?.approvals ?? []).some((a) => {
      const given = a.given ?? [];
      const people = new Set(given.map((g) => g.by));
      return (
        a.step === 'reset' &&
        (a.state === 'approved' || a.state === 'spent') &&
        people.size >= 2 &&
        given.every((g) => !barred.has(g.by)) &&
        Date.parse(a.at ?? '') <= firstReset
      );
    });
    if (!good) {
      violations.push({
        invariant: 'reset-without-two-approvers',
        detail: `${resets.length} reset(s), the first at ${firstReset}, without an approval of two distinct approvers other than the requester and the starter given before it`,
      });
    }
  }
  if (!e.ended) violations.push({ invariant: 'operation-outcome', detail: `the rehearsal did not end (${e.op?.state ?? 'no operation'})` });
  return violations;
}
