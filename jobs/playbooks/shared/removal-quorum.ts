import { checkEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import { quorumAfterRemoval } from '../../../src/rules/quorum.ts';
import { observeEtcdMembership, type EtcdMembership } from '../../../src/talos/etcd-membership.ts';
import type { WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';
import { roleOf } from './node-target.ts';

/** The quorum arithmetic of removing `node` now; for a worker, which is no etcd member, the quorum etcd holds now. */
export async function quorumNow(
  ctx: WalkContext,
  node: string,
): Promise<{ ok: boolean; summary: string; evidence: string[]; membership?: EtcdMembership }> {
  if (roleOf(ctx.cluster, node) === 'worker') {
    const etcd = await checkEtcdQuorum(ctx.talosctl, ctx.cluster.controlPlanes, probeSignal(ctx));
    return {
      ok: true,
      summary: `${etcd.summary}; a worker is not an etcd member, so its removal leaves quorum as it is`,
      evidence: etcd.evidence,
    };
  }
  const membership = await observeEtcdMembership(ctx.talosctl, ctx.cluster.controlPlanes, node, probeSignal(ctx));
  const healthy = Math.min(membership.healthy.length, membership.memberCount);
  const quorum = quorumAfterRemoval(membership.memberCount, { healthy, removingHealthy: membership.healthy.includes(node) });
  return { ok: quorum.ok, summary: quorum.explanation, evidence: membership.evidence, membership };
}
