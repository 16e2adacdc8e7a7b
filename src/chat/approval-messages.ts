import type { Approval, Operation, Step } from '../ops/operation.ts';
import type { ChatMessage } from './chat-port.ts';
import { actions, context, escapeMrkdwn, fields, formatTime, mentionUser, preformatted, section } from './blocks.ts';
import { ACTION, buttonValue } from './buttons.ts';
import { stepLabel } from './operation-root.ts';

export interface ApprovalContext {
  step: Step;
  version: string;
  etcdSummary: string;
  etcdEvidence: string[];
}

/** Which node a request is about, with one fact of its own (the image, the version it runs) and when it expires. */
function nodeFields(step: Step, approval: Approval, fact: [string, string]) {
  return fields([['Node', `${step.nodeName ?? '?'} (${step.node ?? '?'})`], ['Host', step.host ?? 'unknown'], fact, ['Expires', formatTime(approval.expiresAt)]]);
}

/** Approve and Stop of a node's request; the block carries the operation and the request's nonce. */
function approveOrStop(op: Operation, approval: Approval) {
  return actions(`approve-${op.id}-${approval.nonce}`, [
    { text: 'Approve', actionId: ACTION.approve, value: buttonValue(op.id, approval.nonce), style: 'primary' },
    { text: 'Stop', actionId: ACTION.stop, value: buttonValue(op.id, approval.nonce), style: 'danger' },
  ]);
}

/** The question before each control plane: which node, which host, which image, and how etcd looks now. */
export function approvalRequestMessage(op: Operation, approval: Approval, ctx: ApprovalContext): ChatMessage {
  const { step } = ctx;
  const text = `🔐 Approval needed: upgrade ${stepLabel(step)} to ${ctx.version} (${op.id})`;
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(text)}*`),
      nodeFields(step, approval, ['Image', `\`${step.image ?? '?'}\``]),
      section(`*etcd now:* ${escapeMrkdwn(ctx.etcdSummary)}`),
      preformatted(ctx.etcdEvidence),
      approveOrStop(op, approval),
    ],
  };
}

/** The question before a rollback or a removal: which node, where, and how etcd looks now. */
export function nodeApprovalMessage(op: Operation, approval: Approval, step: Step, facts: { summary: string; evidence: string[]; warning: string }): ChatMessage {
  const verb = op.kind === 'node-remove' ? 'reset and remove' : 'roll back';
  const text = `🔐 Approval needed: ${verb} ${step.nodeName ?? ''} (${step.node ?? '?'}) on ${op.cluster} (${op.id})`;
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(text)}*`),
      nodeFields(step, approval, ['Runs', step.fromVersion ?? op.target.fromVersion ?? '?']),
      section(`*What happens:* ${escapeMrkdwn(facts.warning)}`),
      section(`*etcd now:* ${escapeMrkdwn(facts.summary)}`),
      ...(facts.evidence.length > 0 ? [preformatted(facts.evidence)] : []),
      approveOrStop(op, approval),
    ],
  };
}

/** The question before the real upgrade-k8s run: an approver applies what the dry run showed. */
export function applyRequestMessage(op: Operation, approval: Approval, step: Step, dryRun: string | undefined): ChatMessage {
  const v = op.target.version ?? '?';
  const text = `🔐 Apply needed: \`talosctl upgrade-k8s --to ${v}\` through ${step.node ?? 'a healthy control plane'} upgrades the whole cluster ${op.target.fromVersion ?? '?'} → ${v} (${op.id})`;
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(text)}*`),
      fields([
        ['From', op.target.fromVersion ?? '?'],
        ['To', `${v} (Terraform: \`v${v}\`)`],
        ['Snapshot', op.snapshot ? `\`${op.snapshot.id}\`` : 'none'],
        ['Expires', formatTime(approval.expiresAt)],
      ]),
      section(`*Dry run:* ${escapeMrkdwn(dryRun ?? 'see above')}`),
      actions(`apply-${op.id}-${approval.nonce}`, [
        {
          text: 'Apply',
          actionId: ACTION.apply,
          value: buttonValue(op.id, approval.nonce),
          style: 'primary',
          confirm: { title: 'Upgrade Kubernetes?', text: `talosctl upgrade-k8s --to ${v}: every control-plane component and kubelet of ${op.cluster}.`, confirm: 'Apply', deny: 'Not yet' },
        },
        { text: 'Cancel', actionId: ACTION.cancelApply, value: buttonValue(op.id, approval.nonce) },
      ]),
    ],
  };
}

/** What an approval was asked for, in the words of its operation. */
function approvalSubject(op: Operation, step: Step): string {
  if (op.kind === 'k8s-upgrade') return `apply the Kubernetes upgrade to ${op.target.version ?? '?'}`;
  if (op.kind === 'node-rollback' || op.kind === 'node-remove') return stepLabel(step);
  return `upgrade ${stepLabel(step)}`;
}

export function approvalDecidedMessage(op: Operation, approval: Approval, step: Step): ChatMessage {
  const verb = approval.state === 'approved' ? '✅ Approved' : approval.state === 'stopped' ? '🛑 Stopped' : '⏱ Expired';
  const who = approval.by ? ` by ${mentionUser(approval.by)}` : '';
  const when = approval.at ? ` at ${formatTime(approval.at)}` : '';
  const text = `${verb}${who}${when}: ${approvalSubject(op, step)} (${op.id})`;
  const blocks = [section(text)];
  if (approval.state === 'expired') {
    blocks.push(
      context('The operation is paused. Nothing was touched. An approver can ask for approval again:'),
      actions(`rerequest-${op.id}-${approval.nonce}`, [{ text: 'Request approval again', actionId: ACTION.rerequest, value: buttonValue(op.id, approval.nonce) }]),
    );
  }
  return { text, blocks };
}
