import { takeEtcdSnapshot } from '../../../src/ops/etcd-snapshot.ts';
import type { Operation, Snapshot } from '../../../src/ops/operation.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';
import { snapshotHost, StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';
import { walkGate } from '../../engine/walk.ts';
import { alreadyFailingNote } from '../../../src/health/baseline.ts';
import type { SetAside } from '../../../src/health/gate-setting-aside.ts';

/**
 * The operation's etcd snapshot, copied off-cluster with `talosctl` and verified, then stored on
 * the operation. Taken once: a resumed run finds it stored and returns it. The write is a
 * compare-and-set on a walking operation, so a run that lost its operation stores nothing.
 */
export async function operationSnapshot(ctx: WalkContext, op: Operation, talosctl: Talosctl): Promise<Snapshot> {
  const { deps, cluster } = ctx;
  if (op.snapshot !== undefined) return op.snapshot;
  const taken = await takeEtcdSnapshot(talosctl, cluster, {
    signal: ctx.signal,
    timeoutMs: deps.timeouts.stepMs,
    now: deps.now(),
    host: snapshotHost(deps, ctx.session),
  });
  const { op: stored } = await ctx.record((o) => (o.snapshot === undefined ? { snapshot: taken } : undefined));
  if (stored.snapshot === undefined)
    throw new StepFailure(`the snapshot ${taken.id} was taken, but ${op.id} is ${stored.state} and no longer records it`);
  return stored.snapshot;
}

/**
 * The runbook's first step of an upgrade: the health gate, then an etcd snapshot copied
 * off-cluster. Taken once: a resumed run finds it stored and reports it.
 */
export async function snapshotStep(
  ctx: WalkContext,
  op: Operation,
  options: {
    setAside?: SetAside;
    /** The nodes the operation drains, whose budgets the gate judges; default every node. `[]`: it drains none. */
    drainNodes?: readonly string[];
  } = {},
): Promise<StepResult> {
  let note = '';
  if (op.snapshot === undefined) {
    // A failed node being replaced is set aside; what already failed before the operation is named, not a stop.
    const gate = await walkGate(ctx, ctx.cluster, {
      // A replacement drains nothing: disruption budgets are not judged for a drain.
      ...(options.setAside === undefined ? {} : { setAside: options.setAside, drainNodes: [] }),
      ...(options.drainNodes === undefined ? {} : { drainNodes: options.drainNodes }),
      baseline: { baseline: op.baseline, nodes: [] },
    });
    if (!gate.passed) throw new StepFailure('the health gate before starting failed', gate.stopReasons);
    note = alreadyFailingNote(gate);
  }
  const snap = await operationSnapshot(ctx, op, ctx.talosctl);
  return {
    event: 'etcd snapshot taken',
    // Where it is kept and its full sha256 are in the maintenance record; the channel gets a name it can quote.
    detail: `${snap.id} (${snap.bytes} bytes, sha256 ${snap.sha256.slice(0, 12)}…), copied off-cluster${note}`,
  };
}
