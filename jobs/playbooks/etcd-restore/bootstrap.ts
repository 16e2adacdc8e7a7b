import { errorText } from '../../../src/chat/error-text.ts';
import type { Operation, Snapshot, Step } from '../../../src/ops/operation.ts';
import { snapshotIntegrityProblems } from '../../../src/ops/snapshot-integrity.ts';
import { snapshotPathProblem } from '../../../src/ops/snapshot-path.ts';
import { observeEtcdStatus } from '../../../src/talos/observe.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { restoreData } from './data.ts';
import { etcdService, serviceWords } from './etcd-service.ts';
import { JOIN_LIMIT, rebootCommand } from './rejoin.ts';
import { refuseUnlessStaging } from './reset.ts';

/** The one command: as an operator would type it after checking, for the decision message. */
export function bootstrapCommand(node: string, path: string): string {
  return `talosctl -n ${node} --endpoints ${node} bootstrap --recover-from=${path}`;
}

/** Whether etcd on `node` runs again from the snapshot: its service Running and a member that sees a leader. */
async function etcdBack(ctx: WalkContext, node: string): Promise<{ back: boolean; seen: string }> {
  const service = await etcdService(ctx, node);
  if (!service.read || service.state !== 'Running') return { back: false, seen: serviceWords(node, service) };
  try {
    const status = await observeEtcdStatus(ctx.talosctl, [node], probeSignal(ctx), [node]);
    const row = status.rows[0];
    const leader = row !== undefined && row.errors.length === 0 && !/^0+$/.test(row.leader);
    return {
      back: leader,
      seen: leader ? `${node}: etcd Running, member ${row.member}, leader ${row.leader}` : `${node}: etcd Running, no leader yet`,
    };
  } catch (error) {
    if (ctx.signal?.aborted) throw error;
    return { back: false, seen: `${node}: etcd Running; etcd status: ${errorText(error)}` };
  }
}

/**
 * The decision a person makes when the bot cannot tell whether its one bootstrap took: it names the
 * snapshot, what the bot saw, the command an operator may run after checking, and why the bot does
 * not run it again (a second recovery over a recovering etcd can lose what the first one restored).
 */
function undecided(node: string, path: string, snapshotId: string, issuedAt: string, seen: string): StepFailure {
  return new StepFailure(
    `the bootstrap from ${snapshotId} was issued to ${node} at ${issuedAt}, and etcd is not back on it. The bot never issues it twice: a bootstrap that did reach etcd would be refused or, worse, start a second cluster. Check on ${node} (talosctl -n ${node} --endpoints ${node} service etcd; talosctl -n ${node} --endpoints ${node} logs etcd). Only if etcd still waits for a bootstrap (Preparing) and its logs show no recovery, an operator may run: ${bootstrapCommand(node, path)}; then cancel this operation and run /talos health. If its etcd is Failed with "failed to build initial etcd cluster", the bootstrap did not take and etcd's join limit ran out: ${JOIN_LIMIT}. Bring it back first (${rebootCommand(node)}), wait for Preparing, then decide as above`,
    [seen],
    { noRollback: true },
  );
}

/**
 * The snapshot checked once more right before the bootstrap, as the verify step did: the approvals may
 * have waited long enough for retention to prune it, and a path outside the cluster's snapshot folder
 * is refused (the stored operation was changed). Nothing is issued when it fails.
 */
async function checkSnapshotAgain(ctx: WalkContext, snap: Snapshot, node: string): Promise<void> {
  ctx.phase?.(`checking ${snap.id} again before the bootstrap`);
  const outside = await snapshotPathProblem(snap.path, ctx.cluster.snapshotDir);
  const problems = outside === undefined ? await snapshotIntegrityProblems(snap) : [outside];
  if (problems.length === 0) return;
  throw new StepFailure(
    `the snapshot ${snap.id} no longer passes the bot's check, so no bootstrap was issued. Every control plane is wiped and waits for a bootstrap: staging has no etcd and no Kubernetes API until one happens. Safe next: put the snapshot back at ${snap.path} (retention may have pruned it; check the off-cluster copy) and Retry, which checks it again; or recover by hand from another snapshot an operator has verified (${bootstrapCommand(node, '<file>')}), then cancel this operation`,
    problems,
    { noRollback: true },
  );
}

/**
 * Exactly one `talosctl bootstrap --recover-from=<snapshot>` on the first control plane. Its issue is
 * recorded with a compare-and-set before it is made, on the step and in the rehearsal's data (which no
 * Retry clears): a crash, a Retry or a second replica that finds it recorded only looks at etcd.
 */
export async function bootstrapOnce(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const snap = op.snapshot;
  const node = step.node ?? ctx.cluster.controlPlanes[0]!;
  if (snap === undefined)
    throw new StepFailure('no snapshot is recorded for this rehearsal, so nothing was bootstrapped', [], { noRollback: true });
  const issuedAt = ctx.deps.now().toISOString();
  const prior = restoreData(op).bootstrap;
  let ours = false;
  if (prior === undefined && step.issuedAt === undefined) {
    refuseUnlessStaging(ctx, op);
    await checkSnapshotAgain(ctx, snap, node);
    const { op: recorded } = await ctx.record((o) => {
      const current = o.steps.find((s) => s.id === step.id);
      const data = restoreData(o);
      if (current?.issuedAt !== undefined || data.bootstrap !== undefined) return undefined;
      return { step: { id: step.id, issuedAt }, data: { ...data, bootstrap: { node, path: snap.path, issuedAt } } };
    });
    ours = restoreData(recorded).bootstrap?.issuedAt === issuedAt;
  }
  const recorded = restoreData((await ctx.deps.store.get(op.id)) ?? op).bootstrap;
  if (recorded === undefined)
    throw new StepFailure('the bootstrap could not be recorded before it was issued, so it was not issued', [], { noRollback: true });
  if (ours) {
    ctx.phase?.(`bootstrap --recover-from ${snap.id} on ${node}`);
    let output = '';
    try {
      const result = await ctx.talosctl.run(['bootstrap', `--recover-from=${snap.path}`], [node], {
        signal: ctx.signal,
        endpoints: [node],
        timeoutMs: ctx.deps.timeouts.stepMs,
      });
      output = `${result.stdout}${result.stderr}`.trim();
    } catch (error) {
      if (ctx.signal?.aborted) throw error;
      throw new StepFailure(
        `talosctl bootstrap --recover-from=${snap.path} on ${node} failed: ${errorText(error)}. The bot does not issue it again. Check on ${node} (talosctl -n ${node} --endpoints ${node} service etcd) and the snapshot; an operator may run ${bootstrapCommand(node, snap.path)} after checking, then cancel this operation`,
        [],
        { noRollback: true },
      );
    }
    await ctx.record((o) => {
      const data = restoreData(o);
      return data.bootstrap?.issuedAt === issuedAt
        ? { data: { ...data, bootstrap: { ...data.bootstrap, output: output.slice(0, 500) } } }
        : undefined;
    });
  }
  ctx.phase?.(`waiting for etcd on ${node} to run from ${snap.id}`);
  let seen = '';
  const back = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    const look = await etcdBack(ctx, node);
    seen = look.seen;
    return look.back ? { done: true, value: look.seen } : { done: false, pending: look.seen };
  });
  if (!back.ok) throw undecided(node, recorded.path, snap.id, recorded.issuedAt, seen);
  return {
    event: ours ? `bootstrap --recover-from ${snap.id}` : 'bootstrap already issued: not repeated',
    detail: ours
      ? `${bootstrapCommand(node, snap.path)}; ${back.value}`
      : `issued at ${recorded.issuedAt} before a restart; not issued again; ${back.value}`,
  };
}
