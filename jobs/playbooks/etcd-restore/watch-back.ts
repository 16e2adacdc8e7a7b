import { errorText } from '../../../src/chat/error-text.ts';
import { takeEtcdSnapshot } from '../../../src/ops/etcd-snapshot.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { observeEtcdStatus } from '../../../src/talos/observe.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { snapshotHost, StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';
import { probeSignal, walkGate } from '../../engine/walk.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { attachedVolumes, votingMembers } from './cluster-facts.ts';
import { restoreData, type EtcdRestoreData } from './data.ts';
import { fluxReconciledFor } from './flux-reconcile.ts';
import { JOIN_LIMIT, rebootCommand } from './rejoin.ts';

/** Writes a change of the rehearsal's data while the operation still walks. */
async function patchData(ctx: WalkContext, opId: string, patch: (data: EtcdRestoreData) => EtcdRestoreData | undefined): Promise<void> {
  await ctx.record((o) => {
    const next = patch(restoreData(o));
    return next === undefined ? undefined : { data: next };
  });
}

/** One look at the cluster coming back; what is still missing, or nothing. */
async function look(ctx: WalkContext, op: Operation, token: string): Promise<string[]> {
  const { cluster, session } = ctx;
  const missing: string[] = [];
  const status = await observeEtcdStatus(ctx.talosctl, cluster.controlPlanes, probeSignal(ctx), cluster.controlPlanes);
  const leaders = new Set(status.rows.filter((r) => r.errors.length === 0 && !/^0+$/.test(r.leader)).map((r) => r.leader));
  if (leaders.size !== 1) missing.push(`etcd: ${leaders.size === 0 ? 'no leader' : `${leaders.size} leaders seen`}`);
  const members = await votingMembers(ctx.talosctl, cluster, probeSignal(ctx));
  const absent = cluster.controlPlanes.filter((cp) => !members.includes(cp));
  if (absent.length > 0) missing.push(`etcd: ${absent.join(', ')} not a voting member yet`);
  let nodes;
  try {
    nodes = await session.kube.listNodes(probeSignal(ctx));
  } catch (error) {
    if (ctx.signal?.aborted) throw error;
    return [...missing, `Kubernetes API: ${errorText(error)}`];
  }
  const apiAt = ctx.deps.now().toISOString();
  await patchData(ctx, op.id, (d) => (d.apiBackAt === undefined ? { ...d, apiBackAt: apiAt } : undefined));
  const notReady = nodes.filter((n) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True');
  if (notReady.length > 0) missing.push(`Nodes not Ready: ${notReady.map((n) => n.metadata?.name ?? '?').join(', ')}`);
  missing.push(...(await fluxReconciledFor(ctx, token)));
  const before = restoreData(op).before?.attachedVolumes ?? [];
  const attached = await attachedVolumes(session, probeSignal(ctx));
  const detached = before.filter((v) => !attached.includes(v));
  if (detached.length > 0) missing.push(`Longhorn volumes not attached again: ${detached.join(', ')}`);
  return missing;
}

/**
 * The cluster watched back after the recovery: every control plane a voting etcd member under one
 * leader, the Kubernetes API up with every Node Ready, every Flux object reconciled on a request made
 * after the restore and Ready, and the Longhorn volumes that were attached before attached again.
 * Each attempt asks Flux with a token of its own (the time it starts, as `flux reconcile` writes it).
 */
export async function watchBack(ctx: WalkContext, op: Operation): Promise<StepResult> {
  const token = ctx.deps.now().toISOString();
  let pending: string[] = [];
  const back = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    try {
      pending = await look(ctx, op, token);
    } catch (error) {
      if (ctx.signal?.aborted) throw error;
      pending = [errorText(error)];
    }
    ctx.phase?.('watching the cluster come back', pending.slice(0, 3).join('; '));
    return pending.length === 0 ? { done: true, value: undefined } : { done: false, pending: pending.join('; ') };
  });
  if (!back.ok) {
    // A control plane missing from etcd may have run out of etcd's join limit while the restore waited.
    const absent = pending.some((p) => p.includes('not a voting member yet'));
    const joinHint = absent
      ? ` A control plane that is not a voting member and whose etcd is Failed (talosctl -n <node> --endpoints <node> service etcd) ran out of etcd's join limit: ${JOIN_LIMIT}. Bring it back (${rebootCommand('<node>')}); it then joins the restored cluster as a learner.`
      : '';
    throw new StepFailure(
      `the cluster did not come back after the restore.${joinHint} Safe next: Retry, which watches again and asks Flux to reconcile again`,
      pending,
      { noRollback: true },
    );
  }
  const members = await votingMembers(ctx.talosctl, ctx.cluster, probeSignal(ctx));
  const attached = await attachedVolumes(ctx.session, probeSignal(ctx));
  await patchData(ctx, op.id, (d) => ({ ...d, after: { ...d.after, members, attachedVolumes: attached } }));
  return {
    event: 'cluster back',
    detail: `etcd members ${members.join(', ')} under one leader; every Node Ready; Flux reconciled on request ${token} and Ready; ${attached.length} Longhorn volume${attached.length === 1 ? '' : 's'} attached`,
  };
}

/**
 * The gate against the baseline taken before the rehearsal, then a verification snapshot: its
 * `snapshot info` (etcd reading the data back) gives the keys after the restore. A resumed run
 * that already took it keeps it.
 */
export async function restoreGate(ctx: WalkContext, op: Operation): Promise<StepResult> {
  ctx.phase?.('health gate against the baseline');
  const gate = await walkGate(ctx, ctx.cluster, { baseline: { baseline: op.baseline, nodes: ctx.cluster.controlPlanes } });
  if (!gate.passed) throw new StepFailure('the health gate after the restore failed', gate.stopReasons, { noRollback: true });
  let after = restoreData(op).after?.snapshot;
  if (after === undefined) {
    ctx.phase?.('verification snapshot: the keys after the restore');
    const taken = await takeEtcdSnapshot(ctx.talosctl, ctx.cluster, {
      signal: ctx.signal,
      timeoutMs: ctx.deps.timeouts.stepMs,
      now: ctx.deps.now(),
      host: snapshotHost(ctx.deps, ctx.session),
    });
    after = { id: taken.id, path: taken.path, revision: taken.revision, totalKeys: taken.totalKeys ?? 0, takenAt: taken.takenAt };
    const snap = after;
    await patchData(ctx, op.id, (d) => ({ ...d, after: { members: [], attachedVolumes: [], ...d.after, snapshot: snap } }));
  }
  return {
    event: 'health gate passed',
    detail: `${gate.checks.length} checks against the baseline; verification snapshot ${after.id}: revision ${after.revision}, ${after.totalKeys} keys`,
  };
}
