import type { Presentation } from '../../../src/chat/presentation.ts';
import type { Step } from '../../../src/ops/operation.ts';
import { nodeRef, nodeTitle, nodeWithHost } from '../shared/step-texts.ts';

/** The steps of a removal: the node's reset, its Kubernetes Node deleted, the gate without it. */
export type NodeRemoveStepKind = 'reset-node' | 'delete-node' | 'removal-verify';

/** A removal's step: `talosctl reset of talos-w-3 (10.0.20.23, host pve-3): drain, leave etcd, power off`. */
export function nodeRemoveStepLabel(step: Step): string {
  if (step.kind === 'reset-node') return `talosctl reset of ${nodeWithHost(step)}: drain, leave etcd, power off`;
  if (step.kind === 'delete-node') return `delete the Kubernetes Node ${step.nodeName ?? step.node ?? '?'}`;
  return 'health gate of the cluster without the removed node';
}

/** How a removal reads in Slack. */
export const nodeRemoveTexts: Presentation = {
  name: 'node removal',
  noun: 'Removal',
  title: (op) => `Removal of ${nodeTitle(op)}: ${op.cluster}`,
  order: 'after an approver approves',
  gates: '',
  startTitle: 'Remove?',
  reviewItems: [],
  context: () => 'Terraform still has the node: remove its inventory entry and apply Terraform only after this operation completes.',
  stepLabel: nodeRemoveStepLabel,
  plannedGates: (step) => (step.kind === 'reset-node' ? ' · approval' : undefined),
  approval: {
    verb: 'Approve',
    subject: (op, step) => `the reset and removal of ${nodeRef(step)} from ${op.cluster}`,
    headline: (_op, step) => ({ what: 'node removal', ask: `the reset and removal of ${step.nodeName ?? step.node ?? '?'}` }),
    effect: (step) => `talosctl reset of ${nodeRef(step)}: it leaves the cluster, is wiped and powered off; only Terraform brings it back.`,
  },
};
