import { z } from 'zod';
import { declaredNodes } from '../../../src/config/inventory.ts';
import { aboutOwnNode } from '../shared/resolves.ts';
import { errorText } from '../../../src/chat/error-text.ts';
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
import { observeEtcdMembership, type EtcdMembership } from '../../../src/talos/etcd-membership.ts';
import { checkEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import { findNodeByAddress, observeTalosVersions } from '../../../src/talos/observe.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { StepFailure } from '../../engine/job-context.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { endpointsAvoiding } from '../shared/node-endpoints.ts';
import { clusterWithout, nodeSteps, nodePreflight, roleOf, withEndpoints } from '../shared/node-target.ts';
import type { Playbook, StepResult, WalkContext } from '../../engine/playbook.ts';
import { probeSignal, walkGate } from '../../engine/walk.ts';
import { alreadyFailingNote } from '../../../src/health/baseline.ts';

/** The quorum arithmetic of removing `node` now; for a worker, which is no etcd member, the quorum etcd holds now. */
async function quorumNow(
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

/** Waits until the remaining members no longer list the node: a graceful reset leaves etcd before it wipes. */
async function confirmLeftEtcd(ctx: WalkContext, node: string): Promise<void> {
  let evidence: string[] = [];
  const left = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    const membership = await observeEtcdMembership(
      ctx.talosctl,
      ctx.cluster.controlPlanes.filter((cp) => cp !== node),
      node,
      probeSignal(ctx),
    );
    evidence = membership.evidence;
    return membership.isMember(node) === false
      ? { done: true, value: undefined }
      : { done: false, pending: `${node} is still an etcd member` };
  });
  if (!left.ok) {
    throw new StepFailure(
      `${node} is still an etcd member after its reset: remove the member from another control plane (talosctl etcd remove-member) before anything else`,
      evidence,
    );
  }
}

/** A reset requested before a restart: the node stops answering once its reset is through. */
async function waitUntilGone(ctx: WalkContext, node: string, endpoints: string[]): Promise<void> {
  const gone = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    const seen = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpoints)).get(node);
    return seen?.reachable !== true ? { done: true, value: undefined } : { done: false, pending: `${node} runs ${seen.version}` };
  });
  if (!gone.ok) {
    throw new StepFailure(
      `${node} still answers although its reset was requested before a restart: check the node, then cancel and run /talos remove again`,
      [gone.pending],
    );
  }
}

/**
 * The graceful reset: drain, leave etcd, wipe, power off. Requested once: a resumed job
 * watches the node go instead of asking again. A replacement of a retired node runs it too.
 */
export async function reset(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const node = step.node!;
  const isControlPlane = roleOf(ctx.cluster, node) === 'control plane';
  const endpoints = endpointsAvoiding(ctx.cluster, node);
  let detail = `drained${isControlPlane ? ', left etcd' : ''}, wiped and powered off`;
  if (step.issuedAt === undefined) {
    const before = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpoints)).get(node);
    if (before?.reachable !== true) {
      throw new StepFailure(
        `${node} does not answer talosctl, so it cannot be reset gracefully; for a failed node follow the node replacement runbook`,
        [before?.error ?? 'no answer'],
      );
    }
    // Quorum and the gate as they are when the approval was given, not as the plan saw them.
    const quorum = await quorumNow(ctx, node);
    if (!quorum.ok) throw new StepFailure(`etcd quorum: ${quorum.summary}`, quorum.evidence);
    // Nothing has changed yet: what already failed before the operation is named, not a stop.
    const gate = await walkGate(ctx, ctx.cluster, { drainNodes: [node], baseline: { baseline: op.baseline, nodes: [] } });
    if (!gate.passed) throw new StepFailure(`the health gate failed before the reset of ${node}; nothing was reset`, gate.stopReasons);
    detail = `checked when approved: etcd ${quorum.summary}; health gate passed (${gate.checks.length} checks${alreadyFailingNote(gate)}); then ${detail}`;
    await ctx.record({ step: { id: step.id, issuedAt: ctx.deps.now().toISOString() } });
    const lines: string[] = [];
    try {
      await ctx.talosctl.run(['reset', '--graceful', '--reboot=false'], [node], {
        signal: ctx.signal,
        endpoints,
        timeoutMs: ctx.deps.timeouts.stepMs,
        onStderrLine: (line) => {
          lines.push(line);
          if (lines.length > 30) lines.shift();
        },
      });
    } catch (error) {
      throw new StepFailure(`talosctl reset of ${node} failed: ${errorText(error)}`, lines.slice(-15));
    }
  } else {
    await waitUntilGone(ctx, node, endpoints);
    detail = `reset was requested before a restart; ${detail}`;
  }
  if (isControlPlane) await confirmLeftEtcd(ctx, node);
  return { event: `reset ${node}`, detail };
}

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
    const unhealthy = volumes === undefined ? [] : unhealthyVolumes(volumes).map((v) => `Longhorn volume ${v}`);
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
