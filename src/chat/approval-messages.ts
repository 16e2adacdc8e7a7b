import type { Approval, Operation, Step } from '../ops/operation.ts';
import type { Block, ChatMessage } from '../port/chat-port.ts';
import {
  actions,
  context,
  escapeMrkdwn,
  fields,
  formatTime,
  mention,
  mentionUser,
  preformatted,
  section,
  type ButtonSpec,
} from './blocks.ts';
import { ACTION, buttonValue } from './buttons.ts';
import type { Presentation } from './presentation.ts';
import { shortHashes } from './short-hashes.ts';

export interface ApprovalContext {
  step: Step;
  version: string;
  etcdSummary: string;
  etcdEvidence: string[];
}

/** A node as a request names it: `talos-cp-2 (10.0.30.12)`. */
function nodeRef(step: Step): string {
  return `${step.nodeName ? `${step.nodeName} ` : ''}(${step.node ?? '?'})`;
}

/**
 * What an approval is asked for, in the words of its operation's kind: `the upgrade of control plane
 * talos-cp-2 (10.0.30.12) to v1.12.1`, `the Kubernetes upgrade of production 1.34.1 → 1.34.2`. A kind
 * that declares no approval wording names the step.
 */
export function approvalSubject(op: Operation, step: Step, presentation: Presentation): string {
  return presentation.approval?.subject(op, step) ?? `${presentation.stepLabel(step)} on ${op.cluster}`;
}

/** The question a request asks, first in its notification and its blocks: `Approve the upgrade of … to v1.12.1?` */
export function approvalQuestion(op: Operation, step: Step, presentation: Presentation): string {
  return `${presentation.approval?.verb ?? 'Approve'} ${approvalSubject(op, step, presentation)}?`;
}

/** The request's first line: the question, then the operation it belongs to. */
function questionLine(op: Operation, step: Step, presentation: Presentation): string {
  return `🔐 ${approvalQuestion(op, step, presentation)} (${op.id})`;
}

/** Which node a request is about, with one fact of its own (the image, the version it runs) and when it expires. */
function nodeFields(step: Step, approval: Approval, fact: [string, string]) {
  return fields([
    ['Node', escapeMrkdwn(nodeRef(step))],
    ['Host', escapeMrkdwn(step.host ?? 'unknown')],
    fact,
    ['Expires', formatTime(approval.expiresAt)],
  ]);
}

/**
 * Approve and Stop of a node's request; the block carries the operation and the request's nonce.
 * Approve asks once more in a dialog that names the node, so a click on the wrong request in a
 * busy channel touches nothing.
 */
function approveOrStop(op: Operation, approval: Approval, confirm: NonNullable<ButtonSpec['confirm']>) {
  return actions(`approve-${op.id}-${approval.nonce}`, [
    { text: 'Approve', actionId: ACTION.approve, value: buttonValue(op.id, approval.nonce), style: 'primary', confirm },
    { text: 'Stop', actionId: ACTION.stop, value: buttonValue(op.id, approval.nonce), style: 'danger' },
  ]);
}

/** The confirm dialog's title: the node by name (plain text, so no date or mention in it). */
function confirmTitle(step: Step): string {
  return `Approve ${step.nodeName ?? step.node ?? 'this node'}?`;
}

/** The question before each control plane: which node, which host, which image, and how etcd looks now. */
export function approvalRequestMessage(op: Operation, approval: Approval, ctx: ApprovalContext, presentation: Presentation): ChatMessage {
  const { step } = ctx;
  const text = questionLine(op, step, presentation);
  const role = step.kind === 'upgrade-control-plane' ? 'control plane' : 'worker';
  const host = step.host ? ` on host ${step.host}` : '';
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(text)}*`),
      nodeFields(step, approval, ['Image', `\`${shortHashes(step.image ?? '?')}\``]),
      section(`*etcd now:* ${escapeMrkdwn(ctx.etcdSummary)}`),
      preformatted(ctx.etcdEvidence),
      approveOrStop(op, approval, {
        title: confirmTitle(step),
        text: escapeMrkdwn(
          `talosctl upgrade of ${role} ${nodeRef(step)}${host} to ${ctx.version}: the node reboots into the new image; etcd must keep quorum.`,
        ),
        confirm: 'Approve',
        deny: 'Not yet',
      }),
    ],
  };
}

/** What a node's approval request shows: etcd now, what happens, and the effect the confirm dialog names. */
export interface NodeApprovalFacts {
  summary: string;
  evidence: string[];
  warning: string;
}

/** The question before a rollback or a removal: which node, where, and how etcd looks now. */
export function nodeApprovalMessage(
  op: Operation,
  approval: Approval,
  step: Step,
  facts: NodeApprovalFacts,
  presentation: Presentation,
): ChatMessage {
  const text = questionLine(op, step, presentation);
  const effect = presentation.approval?.effect?.(step) ?? approvalSubject(op, step, presentation);
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(text)}*`),
      nodeFields(step, approval, ['Runs', step.fromVersion ?? op.target.fromVersion ?? '?']),
      section(`*What happens:* ${escapeMrkdwn(facts.warning)}`),
      section(`*etcd now:* ${escapeMrkdwn(facts.summary)}`),
      ...(facts.evidence.length > 0 ? [preformatted(facts.evidence)] : []),
      approveOrStop(op, approval, { title: confirmTitle(step), text: escapeMrkdwn(effect), confirm: 'Approve', deny: 'Not yet' }),
    ],
  };
}

/** The question before the real upgrade-k8s run: an approver applies what the dry run showed. */
export function applyRequestMessage(
  op: Operation,
  approval: Approval,
  step: Step,
  dryRun: string | undefined,
  presentation: Presentation,
): ChatMessage {
  const v = op.target.version ?? '?';
  const text = questionLine(op, step, presentation);
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(text)}*`),
      section(
        `\`talosctl upgrade-k8s --to ${v}\` through ${escapeMrkdwn(step.node ?? 'a healthy control plane')} upgrades the whole cluster.`,
      ),
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
          confirm: {
            title: 'Upgrade Kubernetes?',
            text: `talosctl upgrade-k8s --to ${v}: every control-plane component and kubelet of ${op.cluster}.`,
            confirm: 'Apply',
            deny: 'Not yet',
          },
        },
        { text: 'Cancel', actionId: ACTION.cancelApply, value: buttonValue(op.id, approval.nonce) },
      ]),
    ],
  };
}

/**
 * What a request showed under its question, kept on the approval so the decided request still
 * shows the evidence the approver saw: every block but the first (the question) and the buttons.
 */
export function shownEvidence(request: ChatMessage): Block[] {
  return (request.blocks ?? []).slice(1).filter((b) => b['type'] !== 'actions');
}

/**
 * The request with its approvers mentioned, in the text (what a notification shows) and under
 * the question, so Slack notifies them: user ids as `<@U…>`, user groups as `<!subteam^S…>`.
 */
export function withApprovers(request: ChatMessage, approvers: readonly string[]): ChatMessage {
  if (approvers.length === 0) return request;
  const mentions = approvers.map(mention).join(' ');
  const [first, ...rest] = request.blocks ?? [section(request.text)];
  return { text: `${request.text} ${mentions}`, blocks: [...(first ? [first] : []), context(`For ${mentions}`), ...rest] };
}

/** An unanswered request shortly before it expires: the approvers are called again, in the channel. */
export function approvalReminderMessage(
  op: Operation,
  approval: Approval,
  step: Step,
  approvers: readonly string[],
  link: string | undefined,
  presentation: Presentation,
): ChatMessage {
  const mentions = approvers.map(mention).join(' ');
  const request = link ? `<${link}|The request>` : 'The request in this thread';
  const text = `⏰ ${escapeMrkdwn(approvalQuestion(op, step, presentation))} ${request} expires ${formatTime(approval.expiresAt)}; then \`${op.id}\` pauses and touches nothing. ${mentions}`;
  return { text, blocks: [section(text)] };
}

/** A request once decided: who decided and when, above the evidence it showed (node, image, etcd, expiry). */
export function approvalDecidedMessage(op: Operation, approval: Approval, step: Step, presentation: Presentation): ChatMessage {
  const verb = approval.state === 'approved' ? '✅ Approved' : approval.state === 'stopped' ? '🛑 Stopped' : '⏱ Expired';
  const who = approval.by ? ` by ${mentionUser(approval.by)}` : '';
  const when = approval.at ? ` at ${formatTime(approval.at)}` : '';
  const text = `${verb}${who}${when}: ${escapeMrkdwn(approvalSubject(op, step, presentation))} (${op.id})`;
  const blocks = [section(text), ...(approval.shown ?? [])];
  if (approval.state === 'expired') {
    blocks.push(
      context('The operation is paused. Nothing was touched. An approver can ask for approval again:'),
      actions(`rerequest-${op.id}-${approval.nonce}`, [
        { text: 'Request approval again', actionId: ACTION.rerequest, value: buttonValue(op.id, approval.nonce) },
      ]),
    );
  }
  return { text, blocks };
}
