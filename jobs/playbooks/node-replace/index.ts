import { readFile, rm } from 'node:fs/promises';
import { aboutOwnNode } from '../shared/resolves.ts';
import { join } from 'node:path';
import { nodeApprovalMessage } from '../../../src/chat/approval-messages.ts';
import { endpointsAvoiding } from '../shared/node-endpoints.ts';
import { withEndpoints } from '../shared/node-target.ts';
import type { Playbook, WalkContext } from '../../engine/playbook.ts';
import { VM_SHUTDOWN_TIMEOUT_MS } from '../../../src/rules/replace-plan.ts';
import { reset as resetGracefully } from '../shared/node-reset.ts';
import { snapshotStep } from '../shared/snapshot-step.ts';
import { gateAfterApply } from '../shared/apply-gate.ts';
import { applyPlan } from '../shared/plan-apply.ts';
import { planDirOf } from '../shared/plan-dir.ts';
import { applyAgainRequest } from '../shared/apply-again.ts';
import { NodeReplaceData, replaceData, WORKER_DELETE_NODE } from './data.ts';
import { replaceFollowUp, replaceValidation } from './messages.ts';
import { observeNodeNow } from './observe-node.ts';
import { onlyControlPlane, preflight } from './preflight.ts';
import { deleteNode, joinNode, quorumNow, removeMember, REPLAN, replacePlan } from './steps.ts';
import { nodeReplaceTexts } from './texts.ts';

/** Until the new node joined, talosctl goes through the other control planes only: the failed node is never an endpoint. */
function avoidingNode(ctx: WalkContext, node: string): WalkContext {
  return { ...ctx, talosctl: withEndpoints(ctx.talosctl, endpointsAvoiding(ctx.cluster, node)) };
}

/**
 * `/talos replace`: a failed or retired node replaced by Terraform. Snapshot, its etcd member removed
 * (approved, quorum checked again), its Node deleted, a reviewed `tofu plan -replace` of exactly its
 * VM, an approver's apply of that plan, the new node watched until it joins, and the gate.
 */
export const replacePlaybook: Playbook<NodeReplaceData> = {
  command: {
    name: 'node-replace',
    words: ['replace'],
    argument: { kind: 'node' },
    help: 'replace a failed or retired node: etcd member out (a retired node reset gracefully first), `tofu plan -replace` of its VM, applied after approval (operators, approvals)',
    group: 'change',
    example: '/talos replace talos-prd-cp-2',
    form: { title: 'Replace a failed node', submit: 'Plan the replacement' },
    request: {
      what: 'a node replacement',
      refuseNode: onlyControlPlane,
      refuseAtOnce: { lock: true },
      queued: (op, cluster) =>
        `Preflight for a node replacement of ${op.target.node ?? '?'} on *${cluster.name}* is running (\`${op.id}\`); the plan with its quorum arithmetic, or the refusal, appears in this channel. Nothing changes before an operator's Start and an approver's word.`,
    },
  },
  startedBy: 'operators',
  heldByWindows: true,
  texts: nodeReplaceTexts,
  data: NodeReplaceData,
  // The failed node is set aside by the gate (see the preflight's `setAside`); anything else unwell still refuses.
  checks: { snapshotOffCluster: true, talosctlClient: true, healthGate: {}, window: true, lockFree: {} },
  start: 'plan',
  lock: 'cluster',
  // The disagreements about this very node are what the operation settles.
  resolves: aboutOwnNode,
  targetLeaves: true,
  versionRules: 'node',
  preflight,
  // The first change asks first: the member removal of a control plane, the Node deletion of a worker; then the apply.
  needsApproval: (step) =>
    step.kind === 'reset-node' || step.kind === 'remove-member' || step.kind === 'tofu-apply' || step.id === WORKER_DELETE_NODE,
  // An approver who sees the saved plan approves the apply: an operation-wide approval never covers it.
  neverCovered: (step) => step.kind === 'tofu-apply',
  async approvalMessage(ctx, op, approval, step) {
    if (step.kind === 'tofu-apply') return applyAgainRequest(op, approval, nodeReplaceTexts, step);
    const node = step.node!;
    if (step.kind === 'reset-node') {
      const now = await observeNodeNow(avoidingNode(ctx, node), node);
      const etcd = ctx.cluster.controlPlanes.includes(node) ? 'leaves etcd, ' : '';
      const warning = `A retired node: talosctl reset --graceful --reboot=false --nodes ${node} drains it, ${etcd}wipes it and powers it off (as /talos remove does; quorum and the gate are checked again first); then its Node is deleted and its VM replaced by a reviewed plan.`;
      return nodeApprovalMessage(op, approval, step, { summary: now.summary, evidence: [now.summary], warning }, nodeReplaceTexts);
    }
    if (step.kind === 'delete-node') {
      const now = await observeNodeNow(avoidingNode(ctx, node), node);
      const warning = `The Kubernetes Node ${step.nodeName ?? node} is deleted (its pods go with it), then a replace plan is made for review. ${node} is looked at again right before: if it answers and is Ready, nothing is deleted and the step stops.`;
      return nodeApprovalMessage(op, approval, step, { summary: now.summary, evidence: [now.summary], warning }, nodeReplaceTexts);
    }
    const aside = avoidingNode(ctx, node);
    const now = await observeNodeNow(aside, node);
    const quorum = await quorumNow(aside, node, replaceData(op).hostname);
    const member = quorum.member ? `member \`${quorum.member.id}\`` : 'its member (no longer listed: the step will be skipped)';
    const mismatch = quorum.nameMismatch ? `Refused when approved: ${quorum.nameMismatch}. ` : '';
    const warning = `${mismatch}talosctl etcd remove-member through ${quorum.via ?? 'a healthy control plane'} removes ${member} of ${step.nodeName ?? node}, found by its peer address; the node is looked at and quorum checked again first (a node that answers and is Ready again is not touched). Then its Kubernetes Node is deleted and a replace plan is made for review.`;
    const evidence = [now.summary, ...quorum.evidence];
    return nodeApprovalMessage(op, approval, step, { summary: quorum.summary, evidence, warning }, nodeReplaceTexts);
  },
  runStep(ctx, op, step) {
    const node = op.target.node!;
    const aside = avoidingNode(ctx, node);
    if (step.kind === 'snapshot') return snapshotStep(aside, op, { setAside: { address: node } });
    // A retired node's graceful reset is /talos remove's own (drain, leave etcd, wipe, power off).
    if (step.kind === 'reset-node') return resetGracefully(aside, op, step);
    if (step.kind === 'remove-member') return removeMember(aside, op, step);
    if (step.kind === 'delete-node') return deleteNode(aside, op, step);
    if (step.kind === 'replace-plan') return replacePlan(aside, op);
    if (step.kind === 'tofu-apply') {
      const data = replaceData(op);
      // Without stop_on_destroy the provider waits for a graceful guest shutdown (up to 30 min) before the destroy.
      const timeoutMs = ctx.deps.timeouts.stepMs + (data.gracefulShutdown === false ? 0 : VM_SHUTDOWN_TIMEOUT_MS);
      return applyPlan(ctx, op, step, { allowedStops: [data.vmAddress], again: REPLAN, timeoutMs });
    }
    if (step.kind === 'node-join') return joinNode(ctx, op, step);
    return gateAfterApply(ctx, op);
  },
  complete(_ctx, op) {
    const gate = op.steps.find((s) => s.kind === 'replace-gate')?.detail ?? 'health gate passed';
    return Promise.resolve({ validation: replaceValidation(op, gate), followUp: replaceFollowUp(op) });
  },
  // Observation steps run again; a failed plan is planned anew. Never the apply: a saved plan is spent once applied or
  // refused, so an apply refused before it was issued (a stale or changed plan) plans again, and one that was issued is not retried.
  retryFrom: (step) => (step.kind !== 'tofu-apply' ? step.id : step.issuedAt === undefined ? 'replace-plan' : undefined),
  async ended(deps, op) {
    await rm(planDirOf(deps, op.id), { recursive: true, force: true });
  },
  recordAppendix: (deps, op) => readFile(join(planDirOf(deps, op.id), 'tfplan.txt'), 'utf8').catch(() => undefined),
};
