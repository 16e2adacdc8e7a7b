import type { ClusterSession } from '../../src/cluster/cluster-session.ts';
import type { ClusterConfig } from '../../src/config/inventory.ts';
import { runHealthGateSettingAside } from '../../src/health/gate-setting-aside.ts';
import { againstBaseline, baselineRefusals, describeItem, takeBaseline, type Baseline } from '../../src/health/baseline.ts';
import { limitLines } from '../../src/health/rules/format.ts';
import { outsideWindowRefusal } from '../../src/chat/window-refusal.ts';
import { errorText } from '../../src/chat/error-text.ts';
import { observeBotPlacement, snapshotOnClusterError } from '../../src/ops/snapshot-placement.ts';
import { probeSignals, snapshotHost, type OpsJobDeps } from './job-context.ts';
import { talosctlClientCheck } from './talosctl-client.ts';
import { heldByRefusal } from './held-by.ts';
import type { CommonCheckInput, Playbook } from './playbook.ts';
import type { Estate } from '../../src/cluster/estate.ts';
import type { Operation } from '../../src/ops/operation.ts';
import { describeDisagreement } from '../../src/health/rules/estate.ts';

/**
 * The disagreements of the estate that hold this operation: all of them, but those its playbook
 * says it resolves (the removal or replacement of that very node, an apply that declares it).
 */
export function estateRefusals(estate: Estate, playbook: Pick<Playbook, 'resolves'>, op: Operation): string[] {
  return estate.disagreements
    .filter((d) => playbook.resolves?.(op, d) !== true)
    .map((d) => `the sources disagree on the nodes: ${describeDisagreement(d)}`);
}

/**
 * The refusals most playbooks share, declared rather than written in each preflight. The engine
 * adds them after the playbook's own, in this order: the talosctl client, the health gate, the
 * maintenance window, the cluster lock. The snapshot's place is checked before everything else.
 */
export interface PreflightChecks {
  /**
   * The operation takes an etcd snapshot, which must land off the cluster: refused while the bot
   * runs on one of the cluster's nodes, before the playbook's own preflight (a plan, a download)
   * runs at all. Its snapshot step checks again before it takes one.
   */
  snapshotOffCluster?: boolean;
  /** `talosctl version --client` against the Talos the nodes run (`common.running`). */
  talosctlClient?: boolean;
  /**
   * The health gate must pass. `announce`: a passed gate's announcements (switchovers, rebuilds) go into the plan's notes.
   * A passed gate is also the operation's baseline: what was already unwell (see `src/health/baseline.ts`).
   */
  healthGate?: { announce?: boolean };
  /** Production's maintenance window must be open. */
  window?: boolean;
  /** No other operation may hold the cluster (`common.lockFrom` may hand its lock over). `wait` says what to do until it ends. */
  lockFree?: { wait?: string };
}

/** What the common checks found, and the lock the operation takes over when it starts. */
export interface CommonCheckOutcome {
  refusals: string[];
  notes: string[];
  takesLockFrom?: string;
  /** What the health gate found already unwell, when it passed. */
  baseline?: Baseline;
}

/**
 * The refusal of an operation that takes a snapshot while the bot runs on one of the session's
 * nodes (the observed cluster's, whatever the inventory lists); undefined when it may go on.
 */
export async function snapshotPlacementRefusal(
  deps: OpsJobDeps,
  session: ClusterSession,
  checks: PreflightChecks,
  signal?: AbortSignal,
): Promise<string | undefined> {
  if (checks.snapshotOffCluster !== true) return undefined;
  const { onCluster } = await observeBotPlacement(
    session.cluster,
    snapshotHost(deps, session),
    probeSignals(deps.timeouts.probeMs, signal)(),
  );
  return onCluster.verdict === 'on' ? errorText(snapshotOnClusterError(session.cluster.name, onCluster)) : undefined;
}

/** Runs the common checks a playbook declared, with what its preflight handed over. */
export async function runCommonChecks(
  deps: OpsJobDeps,
  cluster: ClusterConfig,
  session: ClusterSession,
  playbook: Pick<Playbook, 'checks' | 'lock' | 'resolves'>,
  op: Operation,
  input: CommonCheckInput,
  signal?: AbortSignal,
): Promise<CommonCheckOutcome> {
  const checks = playbook.checks;
  // Whatever changes the cluster waits until its sources agree on the nodes, unless it is what resolves the difference.
  const refusals: string[] = playbook.lock === 'cluster' ? estateRefusals(session.estate, playbook, op) : [];
  const notes: string[] = [];
  let baseline: Baseline | undefined;
  const probe = probeSignals(deps.timeouts.probeMs, signal);
  const talosctl = input.talosctl ?? (await session.talosctl(input.running, { closest: true }));
  if (checks.talosctlClient === true) {
    const client = input.clientRefusal ?? (await talosctlClientCheck(talosctl, input.running, probe(), input.where));
    if (client !== undefined) refusals.push(client);
  }
  if (checks.healthGate !== undefined) {
    const gateDeps = {
      talosctl,
      kube: session.kube,
      probeTimeoutMs: deps.timeouts.probeMs,
      signal,
      ...(input.drainNodes ? { drainNodes: input.drainNodes } : {}),
    };
    const raw = await runHealthGateSettingAside(cluster, gateDeps, input.setAside);
    const critical = baselineRefusals(raw);
    // A Longhorn that cannot be read adds nothing to the baseline: the gate's own checks judged what a drain needs.
    const volumes = critical.length === 0 ? await session.kube.listLonghornVolumes(probe()).catch(() => undefined) : undefined;
    const taken = critical.length === 0 ? takeBaseline(raw, deps.now().toISOString(), volumes ?? []) : undefined;
    // A Flux failure that is not stalled was there before the operation: its baseline, not a refusal (the runbook stops on stalled).
    const gate = againstBaseline(raw, taken, []);
    if (!gate.passed) refusals.push(`the health gate failed: ${gate.stopReasons.join('; ')}`);
    else if (critical.length > 0) refusals.push(...critical);
    else {
      // What the drains will do that the operator should know before approving: switchovers, Longhorn's rebuilds.
      if (checks.healthGate.announce === true) notes.push(...gate.checks.flatMap((c) => c.announce ?? []));
      const budgets = gate.checks.find((c) => c.id === 'disruption-budgets');
      // An operation that drains no node is refused by no budget; the operator still hears what a drain would meet.
      if (input.drainNodes?.length === 0 && budgets !== undefined && budgets.status !== 'passed')
        notes.push(`${budgets.title}: this operation drains no node, so no budget holds it; ${budgets.summary}`);
      baseline = taken;
      if (baseline !== undefined && baseline.items.length > 0)
        notes.push(
          `Already failing before the operation (not a stop; only what gets worse stops it): ${limitLines(baseline.items.map(describeItem), 10).join('; ')}`,
        );
    }
  }
  if (checks.window === true) {
    const window = outsideWindowRefusal(cluster, deps.now());
    if (window !== undefined) refusals.push(window);
  }
  let takesLockFrom: string | undefined;
  if (checks.lockFree !== undefined) {
    const holder = await deps.lock.holder(cluster.name);
    // The lock is also what keeps two control-plane rollbacks from ever running at once; a stopped upgrade hands its lock over.
    if (holder !== undefined && holder === input.lockFrom) takesLockFrom = holder;
    else if (holder !== undefined) refusals.push(await heldByRefusal(deps, cluster.name, holder, checks.lockFree.wait));
  }
  return { refusals, notes, takesLockFrom, ...(baseline === undefined ? {} : { baseline }) };
}
