import type { Presentation } from '../../../src/chat/presentation.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { nodeRef, nodeTitle, nodeWithHost } from '../shared/step-texts.ts';

/** The steps of a rollback: the node's rollback, then the wait for it to come back. */
export type NodeRollbackStepKind = 'rollback-node' | 'rollback-verify';

/** A rollback's step: `talosctl rollback of talos-w-1 (10.0.20.21, host pve-1)`. */
export function nodeRollbackStepLabel(step: Step): string {
  if (step.kind === 'rollback-node') return `talosctl rollback of ${nodeWithHost(step)}`;
  return 'wait for the node to come back Ready, verify the version it reports';
}

/**
 * Why a cancel is refused now: the node was asked to roll back and is not verified back, so a
 * cancel would free the cluster while it reboots. Undefined once it may be cancelled.
 */
export function rollbackCancelRefusal(op: Operation): string | undefined {
  const issued = op.steps.find((s) => s.kind === 'rollback-node' && s.issuedAt !== undefined);
  const verified = op.steps.find((s) => s.kind === 'rollback-verify')?.status === 'done';
  if (issued === undefined || verified) return undefined;
  return (
    `${issued.node ?? 'the node'} is rebooting into its previous image: a cancel now would free *${op.cluster}* while the node is down. ` +
    'The rollback ends by itself once the node is back or its wait runs out; if it then failed, cancel it to release the cluster.'
  );
}

/** How a rollback reads in Slack. */
export const nodeRollbackTexts: Presentation = {
  name: 'rollback',
  noun: 'Rollback',
  title: (op) => `Rollback of ${nodeTitle(op)}: ${op.cluster}`,
  order: 'after an approver approves',
  gates: '',
  startTitle: 'Roll back?',
  reviewItems: [],
  context: (op) =>
    `Ran ${op.target.fromVersion ?? '?'} before the rollback. Do not move the Terraform \`talos_version\` declaration until the incident is resolved; if you already changed it, revert that change before the next apply.`,
  stepLabel: nodeRollbackStepLabel,
  plannedGates: (step) => (step.kind === 'rollback-node' ? ' · approval' : undefined),
  approval: {
    verb: 'Approve',
    subject: (op, step) => `the rollback of ${nodeRef(step)} on ${op.cluster}`,
    headline: (_op, step) => ({ what: 'node rollback', ask: `${step.nodeName ?? step.node ?? '?'} → its previous Talos image` }),
    effect: (step) =>
      `talosctl rollback of ${nodeRef(step)}: drained first when Kubernetes calls it Ready, then it reboots into its previous Talos image.`,
  },
};
