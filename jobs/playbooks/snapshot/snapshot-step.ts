import { runHealthGate } from '../../../src/health/health-gate.ts';
import { takeEtcdSnapshot } from '../../../src/ops/etcd-snapshot.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';

/**
 * The runbook's first step of an upgrade: the health gate, then an etcd snapshot copied
 * off-cluster. Taken once: a resumed run finds it stored and reports it.
 */
export async function snapshotStep(ctx: WalkContext, op: Operation): Promise<StepResult> {
  const { deps, cluster } = ctx;
  if (op.snapshot === undefined) {
    const gate = await runHealthGate(cluster, { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: deps.timeouts.probeMs, signal: ctx.signal });
    if (!gate.passed) throw new StepFailure('the health gate before starting failed', gate.stopReasons);
    const taken = await takeEtcdSnapshot(ctx.talosctl, cluster, { signal: ctx.signal, timeoutMs: deps.timeouts.stepMs, now: deps.now() });
    await deps.store.update(op.id, (o) => ({ ...o, snapshot: taken }));
  }
  const snap = (await deps.store.get(op.id))!.snapshot!;
  return { event: 'etcd snapshot taken', detail: `${snap.id} (${snap.bytes} bytes, sha256 ${snap.sha256.slice(0, 16)}…) in ${cluster.snapshotDir}` };
}
