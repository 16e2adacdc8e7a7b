import { z } from 'zod';
import { declaredNodes } from '../../../src/config/inventory.ts';
import { aboutOwnNode } from '../shared/resolves.ts';
import { nodeApprovalMessage } from '../../../src/chat/approval-messages.ts';
import { nodeRemoveTexts } from './texts.ts';
import { removalFollowUp } from './messages.ts';
import { unhealthyVolumes } from '../../../src/health/rules/longhorn.ts';
import { runHealthGate } from '../../../src/health/health-gate.ts';
import { againstBaseline } from '../../../src/health/baseline.ts';
import type { ClusterConfig } from '../../../src/config/inventory.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { quorumAfterRemoval } from '../../../src/rules/quorum.ts';
import { workloadCapacityAfterRemoval } from '../../../src/rules/workload-nodes.ts';
import { observeEtcdMembership } from '../../../src/talos/etcd-membership.ts';
import { findNodeByAddress } from '../../../src/talos/observe.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { StepFailure } from '../../engine/job-context.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { reset } from '../shared/node-reset.ts';
import { quorumNow } from '../shared/removal-quorum.ts';
import { clusterWithout, nodeSteps, nodePreflight, roleOf, withEndpoints } from '../shared/node-target.ts';
import type { Playbook, StepResult, WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';

/**
 * Deletes the Node that carries the removed address, found by that address now: the name the
 * bot stored at the plan must be its name, or nothing is deleted (the store is not the authority
 * over which Node goes).
 */
async function deleteNode(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const node = step.node!;
  const name = findNodeByAddress(await ctx.session.kube.listNodes(probeSignal(ctx)), node)?.metadata?.name;
  if (name === undefined) return { event: `no Kubernetes Node for ${node}`, detail: 'no Node carries this address; nothing to delete' };
  const stored = [...new Set([step.nodeName, op.target.nodeName].filter((n): n is string => n !== undefined))];
  const other = stored.filter((n) => n !== name);
  if (other.length > 0) {
    throw new StepFailure(
      `the Node that carries ${node} is ${name}, not ${other.join(' or ')} as the bot stored when it planned the removal, so no Node was deleted. ${node} is reset; its Node ${name} stays (NotReady). Safe next: check which Node has ${node} (kubectl get nodes -o wide), then delete that one by hand (kubectl delete node ${name}) once you are sure it is the removed node`,
      [`Node ${name} has ${node}`, `stored: ${other.join(', ')}`],
      { noRollback: true },
    );
  }
  await ctx.session.kube.deleteNode(name, probeSignal(ctx));
  const still = findNodeByAddress(await ctx.session.kube.listNodes(probeSignal(ctx)), node);
  if (still !== undefined) {
    throw new StepFailure(`the Node ${name} registered again after its deletion: its kubelet still runs, so ${node} was not reset`, [
      `Node ${still.metadata?.name ?? name} has ${node}`,
    ]);
  }
  return { event: 'Kubernetes Node deleted', detail: `Node ${name} (${node}) deleted from ${op.cluster}` };
}

/**
 * The gate against the cluster as it now is, and Longhorn's volumes healthy: pods evicted by the
 * drain may take a while to settle elsewhere, and Longhorn rebuilds the replicas the node held.
 */
async function verify(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const node = step.node!;
  const remaining = clusterWithout(ctx.cluster, node);
  const talosctl = withEndpoints(ctx.talosctl, remaining.controlPlanes);
  let stopReasons: string[] = [];
  const verified = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    const [gate, volumes] = await Promise.all([
      // What was already failing before the removal is named, not a stop; what got worse stops.
      runHealthGate(remaining, { talosctl, kube: ctx.session.kube, probeTimeoutMs: ctx.deps.timeouts.probeMs, signal: ctx.signal }).then(
        (report) => againstBaseline(report, op.baseline, []),
      ),
      ctx.session.kube.listLonghornVolumes(probeSignal(ctx)),
    ]);
    const unhealthy = volumes === undefined ? [] : unhealthyVolumes(volumes).map((v) => `Longhorn ${v}`);
    stopReasons = [...gate.stopReasons, ...unhealthy];
    const longhorn =
      volumes === undefined ? '' : `; ${volumes.length} Longhorn volume${volumes.length === 1 ? '' : 's'} healthy or detached`;
    return stopReasons.length === 0
      ? { done: true, value: `${gate.checks.length} checks${longhorn}` }
      : { done: false, pending: stopReasons.join('; ') };
  });
  if (!verified.ok) throw new StepFailure(`the final check without ${node} failed`, stopReasons);
  return { event: 'verified', detail: `health gate passed without ${node} (${verified.value})` };
}

/** The runbook's "Remove a node" checks, made while Terraform still has the node's address and credentials. */
/**
 * The refusal the inventory alone decides: the only control plane never goes by removal. Whether
 * the workloads keep a node to run on needs the cluster's taints, so the preflight decides that.
 */
function onlyControlPlane(cluster: ClusterConfig, node: string): string | undefined {
  if (!cluster.controlPlanes.includes(node) || cluster.controlPlanes.length > 1) return undefined;
  return `${node} is the only control plane of *${cluster.name}*: removing it leaves no etcd member, which is disaster recovery, not a node removal. Follow the disaster-recovery runbook.`;
}

/** Why the node must answer, in the refusal when it does not. */
const UNREACHABLE = 'it cannot be drained and reset gracefully; for a failed node follow the node replacement runbook';

const preflight: Playbook['preflight'] = async (deps, cluster, op, session, signal) => {
  const { probe, address, node, refusals, notes } = await nodePreflight(deps, { cluster, op, session, signal }, UNREACHABLE);
  // Checked again against the observed control planes: the inventory may list none.
  const only = onlyControlPlane(cluster, address);
  if (only !== undefined) refusals.push(only);
  // Workloads need a node to go to: a control plane without the NoSchedule taint takes them as a worker does.
  const capacity = workloadCapacityAfterRemoval(node.kubeNodes, address);
  if (capacity.refusal !== undefined) refusals.push(capacity.refusal);
  if (capacity.note !== undefined) notes.push(capacity.note);
  // The only control plane is refused by the command itself; the arithmetic also covers a single member.
  if (node.role === 'control plane') {
    const membership = await observeEtcdMembership(node.talosctl, cluster.controlPlanes, address, probe());
    const healthy = Math.min(membership.healthy.length, membership.memberCount);
    const quorum = quorumAfterRemoval(membership.memberCount, { healthy, removingHealthy: membership.healthy.includes(address) });
    if (quorum.ok) notes.push(`etcd quorum: ${quorum.explanation}.`);
    else refusals.push(`etcd quorum: ${quorum.explanation}`);
  }
  const steps = nodeSteps(node, [
    ['reset', 'reset-node'],
    ['delete-node', 'delete-node'],
    ['verify', 'removal-verify'],
  ]);
  // The reset step's approval shows the version the node runs.
  steps[0]!.fromVersion = node.running;
  // Disruption budgets are judged by the drain this removal does: the one node's.
  return {
    refusals,
    notes,
    steps,
    target: {
      nodeName: node.view.name,
      nodeRole: node.role === 'control plane' ? 'controlplane' : 'worker',
      fromVersion: node.running,
      talosVersion: node.running,
    },
    common: { ...node.common, drainNodes: [address] },
  };
};

/** `/talos remove`: an approver's word, the graceful reset, the Node deleted, the gate without it. */
export const removePlaybook: Playbook = {
  command: {
    name: 'node-remove',
    words: ['remove'],
    argument: { kind: 'node' },
    help: 'remove a node (operators, approval)',
    group: 'change',
    example: '/talos remove 10.0.30.21',
    form: { title: 'Remove a node', submit: 'Plan the removal' },
    request: {
      what: 'a node removal',
      refuseNode: onlyControlPlane,
      refuseAtOnce: { lock: true },
      queued: (op, cluster) =>
        `Preflight for a node removal of ${op.target.node ?? '?'} on *${cluster.name}* is running (\`${op.id}\`); the plan and the approval request, or the refusal, appear in this channel.`,
    },
  },
  startedBy: 'operators',
  heldByWindows: true,
  texts: nodeRemoveTexts,
  data: z.undefined(),
  // A removal is a planned change, so production's maintenance windows apply (a rollback, being incident response, is exempt).
  checks: { talosctlClient: true, healthGate: {}, window: true, lockFree: {} },
  start: 'run',
  lock: 'cluster',
  // The disagreements about this very node are what the operation settles.
  resolves: aboutOwnNode,
  targetLeaves: true,
  versionRules: 'node',
  preflight,
  needsApproval: (step) => step.kind === 'reset-node',
  async approvalMessage(ctx, op, approval, step) {
    const quorum = await quorumNow(ctx, step.node!);
    const warning = `talosctl reset --graceful --reboot=false --nodes ${step.node ?? '?'} drains the node, ${roleOf(ctx.cluster, step.node!) === 'control plane' ? 'leaves etcd, ' : ''}wipes it and powers it off; then its Kubernetes Node is deleted. Only Terraform can bring it back.`;
    return nodeApprovalMessage(op, approval, step, { summary: quorum.summary, evidence: quorum.evidence, warning }, nodeRemoveTexts);
  },
  runStep(ctx, op, step) {
    if (step.kind === 'reset-node') return reset(ctx, op, step);
    if (step.kind === 'delete-node') return deleteNode(ctx, op, step);
    return verify(ctx, op, step);
  },
  complete(ctx, op) {
    const node = op.target.node!;
    const gate = op.steps.find((s) => s.kind === 'removal-verify')?.detail ?? 'health gate passed';
    return Promise.resolve({
      validation: `${node} reset and its Node deleted; ${gate}`,
      followUp: removalFollowUp(op, node, roleOf(ctx.cluster, node), declaredNodes(ctx.cluster)),
    });
  },
  retryFrom: () => undefined,
};
