import { errorText } from '../src/chat/error-text.ts';
import { nodeApprovalMessage, rollbackFollowUp } from '../src/chat/operation-messages.ts';
import { allNodes } from '../src/config/inventory.ts';
import type { Operation, Step } from '../src/ops/operation.ts';
import { observeEtcdMembership, quorumWhileRebooting } from '../src/talos/etcd-membership.ts';
import { findNodeByAddress, kubeNodeView, observeKubeNode, observeTalosVersions } from '../src/talos/observe.ts';
import { sleep, StepFailure, type OpsJobDeps } from './job-context.ts';
import { endpointsAvoiding } from './node-upgrade.ts';
import { roleOf } from './node-target.ts';
import { createWalkJob, patchStep, probeSignal, type Playbook, type StepResult, type WalkContext } from './operation-walk.ts';

async function etcdFacts(ctx: WalkContext, node: string): Promise<{ ok: boolean; summary: string; evidence: string[] }> {
  if (roleOf(ctx.cluster, node) === 'worker') return { ok: true, summary: 'a worker is not an etcd member; etcd is not affected', evidence: [] };
  if (ctx.cluster.controlPlanes.length === 1) return { ok: true, summary: 'the only control plane: the Kubernetes API is down while it reboots', evidence: [] };
  const membership = await observeEtcdMembership(ctx.talosctl, ctx.cluster.controlPlanes, node, probeSignal(ctx));
  const quorum = quorumWhileRebooting(membership, node);
  return { ok: quorum.ok, summary: quorum.explanation, evidence: membership.evidence };
}

/** Issues the rollback once: a second one would flip the boot entry back to the image that failed. */
async function rollback(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const node = step.node!;
  if (step.issuedAt !== undefined) return { event: `rollback of ${node} already issued`, detail: 'issued before a restart; not issued again (a second rollback would switch back)' };
  const endpoints = endpointsAvoiding(ctx.cluster, node);
  const before = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpoints)).get(node);
  if (before?.reachable !== true) throw new StepFailure(`${node} does not answer talosctl; a rollback needs its API`, [before?.error ?? 'no answer']);
  const etcd = await etcdFacts(ctx, node);
  if (!etcd.ok) throw new StepFailure(`etcd would lose quorum while ${node} reboots: ${etcd.summary}`, etcd.evidence);
  await patchStep(ctx.deps, op.id, step.id, { issuedAt: ctx.deps.now().toISOString(), fromVersion: before.version });
  try {
    await ctx.talosctl.run(['rollback'], [node], { signal: ctx.signal, endpoints });
  } catch (error) {
    throw new StepFailure(`talosctl rollback of ${node} failed: ${errorText(error)}`);
  }
  return { event: `talosctl rollback issued on ${node}`, detail: `ran ${before.version}; rebooting into its previous image` };
}

/** rollback has no --wait: watch the node until it answers on another version and Kubernetes calls it Ready. */
async function waitForNode(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const { deps, cluster } = ctx;
  const node = step.node!;
  const from = op.steps.find((s) => s.kind === 'rollback-node')?.fromVersion ?? op.target.fromVersion;
  const endpoints = endpointsAvoiding(cluster, node);
  // The reboot is asynchronous: give the node a moment to go down before watching it come back.
  await sleep(Math.min(deps.timeouts.pollMs * 2, 10_000), ctx.signal);
  const deadline = Date.now() + deps.timeouts.nodeReadyMs;
  let last = 'no observation yet';
  let sameVersion = false;
  for (;;) {
    const v = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpoints)).get(node);
    const kube = await observeKubeNode(ctx.session.kube, node, cluster.hostLabel, probeSignal(ctx)).catch(() => undefined);
    if (v?.reachable === true && kube?.ready === true && v.version !== from) {
      await deps.store.update(op.id, (o) => ({ ...o, target: { ...o.target, version: v.version } }));
      return { event: 'rollback verified', detail: `${node} is back on ${v.version} and Ready (ran ${from ?? '?'})` };
    }
    sameVersion = v?.reachable === true && v.version === from;
    last = `talosctl: ${v?.reachable === true ? v.version : (v?.error ?? 'no answer')}; Kubernetes: ${kube === undefined ? 'no answer' : kube.ready ? 'Ready' : 'not Ready'}`;
    if (Date.now() >= deadline) break;
    await sleep(deps.timeouts.pollMs, ctx.signal);
  }
  const seconds = Math.round(deps.timeouts.nodeReadyMs / 1000);
  if (sameVersion) {
    throw new StepFailure(`${node} still runs ${from} ${seconds} s after the rollback: it did not boot its previous image`, [`last observation: ${last}`]);
  }
  throw new StepFailure(`${node} did not come back within ${seconds} s after the rollback`, [
    `last observation: ${last}`,
    `ran ${from ?? '?'} before the rollback`,
    `check its console${step.host ? ` on host ${step.host}` : ''}; the cluster stays locked until an operator cancels`,
  ]);
}

/** `/talos rollback`: an approver's word, talosctl rollback on that one node, then its return verified. */
export function rollbackPlaybook(): Playbook {
  return {
    needsApproval: (step) => step.kind === 'rollback-node',
    async approvalMessage(ctx, op, approval, step) {
      const etcd = await etcdFacts(ctx, step.node!);
      const warning = `talosctl rollback --nodes ${step.node ?? '?'} switches the node to its previous Talos image and reboots it at once; its workloads restart elsewhere.`;
      return nodeApprovalMessage(op, approval, step, { summary: etcd.summary, evidence: etcd.evidence, warning });
    },
    runStep: (ctx, op, step) => (step.kind === 'rollback-node' ? rollback(ctx, op, step) : waitForNode(ctx, op, step)),
    async complete(ctx, op) {
      const node = op.target.node!;
      const kubeNodes = await ctx.session.kube.listNodes(probeSignal(ctx));
      const others = allNodes(ctx.cluster)
        .filter((a) => a !== node)
        .map((a) => `${a} ${kubeNodeView(findNodeByAddress(kubeNodes, a), ctx.cluster.hostLabel).osVersion ?? 'unknown'}`);
      const version = op.target.version ?? '?';
      return { validation: `${node} back on ${version} and Ready (ran ${op.target.fromVersion ?? '?'})`, followUp: rollbackFollowUp(op, node, version, others) };
    },
    retryFrom: () => undefined,
  };
}

export function createRollbackRunJob(deps: OpsJobDeps) {
  return createWalkJob(deps, rollbackPlaybook());
}
