import { escapeMrkdwn, fields } from '../../../src/chat/blocks.ts';
import type { Presentation } from '../../../src/chat/presentation.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import type { Block } from '../../../src/port/chat-port.ts';
import { nodeRef, nodeTitle, SNAPSHOT_LABEL } from '../shared/step-texts.ts';
import { replaceData, WORKER_DELETE_NODE } from './data.ts';
import { isoConfirmationsOf } from '../shared/boot-iso-texts.ts';

/** The steps of a replacement: snapshot, member out, Node out, the reviewed replace plan, its apply, the join, the gate. */
export type NodeReplaceStepKind =
  'snapshot' | 'reset-node' | 'remove-member' | 'delete-node' | 'replace-plan' | 'tofu-apply' | 'node-join' | 'replace-gate';

function vmOf(op: Operation): string {
  return replaceData(op).vmAddress;
}

/** A replacement's step, e.g. `` `talosctl etcd remove-member` of talos-prd-cp-2 (10.0.30.12), through a healthy control plane ``. */
export function nodeReplaceStepLabel(step: Step): string {
  if (step.kind === 'snapshot') return SNAPSHOT_LABEL;
  if (step.kind === 'reset-node')
    return `\`talosctl reset --graceful\` of the retired ${nodeRef(step)}: drain, leave etcd, wipe, power off`;
  if (step.kind === 'remove-member') return `\`talosctl etcd remove-member\` of ${nodeRef(step)}, through a healthy control plane`;
  if (step.kind === 'delete-node') return `delete the Kubernetes Node ${step.nodeName ?? step.node ?? '?'}`;
  if (step.kind === 'replace-plan')
    return `\`tofu plan -replace\` of ${step.nodeName ?? '?'}'s VM, kept for review: exactly that VM, nothing else`;
  if (step.kind === 'tofu-apply') return '`tofu apply` of exactly the reviewed replace plan';
  if (step.kind === 'node-join')
    return `watch the new ${step.nodeName ?? '?'} join: Node Ready; a control plane a voting etcd member under one leader`;
  return 'health gate of the cluster with the new node';
}

function replaceDetails(op: Operation): Block[] {
  const data = replaceData(op);
  const plan = data.terraform;
  const rows: [string, string][] = [['VM', `\`${escapeMrkdwn(data.vmAddress)}\``]];
  if (plan !== undefined)
    rows.push(['Plan', `${escapeMrkdwn(plan.summary)}${plan.planSha256 ? ` · sha256 \`${plan.planSha256.slice(0, 12)}…\`` : ''}`]);
  if (data.removedMember) rows.push(['Removed member', `${escapeMrkdwn(data.removedMember.hostname)} \`${data.removedMember.id}\``]);
  if (data.joinedMember) rows.push(['Joined member', `${escapeMrkdwn(data.joinedMember.hostname)} \`${data.joinedMember.id}\``]);
  return [fields(rows)];
}

/** How a replacement reads in Slack. */
export const nodeReplaceTexts: Presentation = {
  name: 'node replacement',
  noun: 'Replacement',
  title: (op) => `Replacement of ${nodeTitle(op)}: ${op.cluster}`,
  order:
    "after an operator's Start; the first change (a control plane's member removal, a worker's Node deletion) and the apply each wait for an approver",
  gates:
    'the node looked at again before its member or Node goes (one that answers and is Ready again is not touched); quorum checked again for the member at its peer address; the plan must replace exactly this VM and configure the new one; the apply runs the reviewed plan file once; the new node must be Ready, run the declared Talos and its class schematic and, for a control plane, be a voting etcd member under one leader.',
  startTitle: 'Replace this node?',
  reviewItems: [],
  details: (op) => (typeof op.data?.['vmAddress'] === 'string' && op.data['vmAddress'] !== '' ? replaceDetails(op) : []),
  context: (op) => (op.snapshot ? `Snapshot \`${op.snapshot.id}\`` : undefined),
  stepLabel: nodeReplaceStepLabel,
  // The new VM boots the uploaded ISO: the apply's approver ticks that it matches the bot's sha256.
  approvalConfirmations: (op, step) => (step.kind === 'tofu-apply' ? isoConfirmationsOf(replaceData(op).terraform?.iso) : []),
  plannedGates: (step) =>
    step.kind === 'reset-node' || step.kind === 'remove-member' || step.kind === 'tofu-apply' || step.id === WORKER_DELETE_NODE
      ? ' · approval'
      : undefined,
  approval: {
    verb: 'Approve',
    subject: (op, step) =>
      step.kind === 'reset-node'
        ? `the graceful reset of the retired ${nodeRef(step)} on ${op.cluster}`
        : step.kind === 'remove-member'
          ? `the removal of ${nodeRef(step)}'s etcd member from ${op.cluster}`
          : step.kind === 'delete-node'
            ? `the deletion of the Kubernetes Node ${step.nodeName ?? step.node ?? '?'} from ${op.cluster}`
            : `\`tofu apply\` of the plan that replaces ${op.target.nodeName ?? '?'}'s VM (${vmOf(op)}) on ${op.cluster}`,
    headline: (op, step) =>
      step.kind === 'reset-node'
        ? { what: 'node replacement', ask: `reset the retired ${step.nodeName ?? step.node ?? '?'}` }
        : step.kind === 'remove-member'
          ? { what: 'node replacement', ask: `remove the etcd member of ${step.nodeName ?? step.node ?? '?'}` }
          : step.kind === 'delete-node'
            ? { what: 'node replacement', ask: `delete the Node of ${step.nodeName ?? step.node ?? '?'}` }
            : { what: 'node replacement', ask: `tofu apply: replace the VM of ${op.target.nodeName ?? '?'}` },
    effect: (step) =>
      step.kind === 'reset-node'
        ? `talosctl reset --graceful --reboot=false: ${nodeRef(step)} is drained, leaves etcd if it is a member, is wiped and powers off; its VM is then replaced.`
        : step.kind === 'remove-member'
          ? `talosctl etcd remove-member: ${nodeRef(step)} leaves the etcd membership; quorum is checked again first.`
          : step.kind === 'delete-node'
            ? `kubectl delete node: ${nodeRef(step)} and its pods leave Kubernetes; the node is looked at again first, and a node that answers and is Ready is not touched.`
            : 'tofu apply of exactly the reviewed plan file: the old VM and its disks are destroyed and a new one is created.',
  },
};
