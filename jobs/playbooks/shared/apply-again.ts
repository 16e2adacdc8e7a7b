import { approvalNotification, approvalQuestion, approveOrStopButtons, WHILE_WAITING } from '../../../src/chat/approval-messages.ts';
import { escapeMrkdwn, fields, formatTime, mentionUser, section } from '../../../src/chat/blocks.ts';
import { startConfirmBlock } from '../../../src/chat/operation-root.ts';
import type { Presentation } from '../../../src/chat/presentation.ts';
import type { Approval, Operation, Step } from '../../../src/ops/operation.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import { isoBlocks } from './boot-iso-texts.ts';
import { planData } from './plan-data.ts';

/**
 * The question before the apply once the Apply that started the change no longer holds (a failure or a
 * Retry spent it, or it waited too long): the same reviewed plan, applied only on a fresh approver's word.
 */
export function applyAgainRequest(op: Operation, approval: Approval, presentation: Presentation, step: Step): ChatMessage {
  const tf = planData(op).terraform;
  const text = approvalNotification(op, step, approval, presentation);
  // What the approver ticks (a replacement's boot ISO against the bot's sha256) sits above the buttons, with what it confirms.
  const ticks = presentation.approvalConfirmations?.(op, step) ?? [];
  const confirm = ticks.length > 0 ? [...isoBlocks(tf?.iso, 'Approve'), startConfirmBlock(op.id, approval.nonce, ticks)] : [];
  const earlier = op.approvals.filter((a) => a.step === approval.step && a.state === 'spent' && a.by !== undefined).at(-1);
  const why = earlier
    ? `The Apply by ${mentionUser(earlier.by!)} at ${formatTime(earlier.at ?? earlier.requestedAt)} no longer holds: a failure or a Retry came after it, or it waited too long. Nothing was applied since.`
    : 'Nothing was applied yet.';
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(approvalQuestion(op, step, presentation))}*`),
      { ...section(why), block_id: WHILE_WAITING },
      fields([
        ['Terraform commit', tf?.commit ? `\`${tf.commit.slice(0, 12)}\`` : '?'],
        ['Plan', `${escapeMrkdwn(tf?.summary ?? '?')}${tf?.planSha256 ? ` · sha256 \`${tf.planSha256.slice(0, 12)}…\`` : ''}`],
        ['Snapshot', op.snapshot ? `\`${op.snapshot.id}\`` : 'none yet'],
        ['Expires', formatTime(approval.expiresAt)],
      ]),
      ...confirm,
      approveOrStopButtons(op, approval, step, presentation, {
        title: 'Apply the reviewed plan?',
        text: escapeMrkdwn(
          `tofu apply of exactly the reviewed plan file on ${op.cluster}; the plan is checked against its hash and commit first.`,
        ),
        confirm: 'Approve',
        deny: 'Not yet',
      }),
    ],
  };
}
