import type { ChatMessage, ChatPort } from '../../../src/port/chat-port.ts';
import type { Presentation } from '../../../src/chat/presentation.ts';
import { approvalDecidedMessage } from '../../../src/chat/approval-messages.ts';
import { editCarrier } from '../audit.ts';
import type { Approval, Operation } from '../../../src/ops/operation.ts';

/** Where the request is: as stored, else its audit reply, else the message the click came from. */
function requestTs(op: Operation, approval: Approval, clickedTs: string | undefined): string | undefined {
  return approval.messageTs || op.audit.find((e) => e.seq === approval.seq)?.ts || clickedTs;
}

/**
 * Edits an approval request to show how it was decided (approved, stopped, expired, or ended by a
 * cancel): its buttons go, the entries its reply carries stay. `clickedTs` is the message a click
 * came from, for a request Slack wrote before the bot learned where (a 5xx after the write).
 */
export async function showDecision(
  chat: ChatPort,
  op: Operation,
  approval: Approval,
  presentation: Presentation,
  clickedTs?: string,
): Promise<void> {
  const step = op.steps.find((s) => s.id === approval.step);
  const ts = requestTs(op, approval, clickedTs);
  if (step === undefined || ts === undefined) return;
  await chat.update(op.channel, ts, editCarrier(op, ts, approval.seq, approvalDecidedMessage(op, approval, step, presentation)));
}

/**
 * Edits a request that one of several approvers approved: it keeps its buttons, and says who approved
 * and that another approver is needed.
 */
export async function showPartial(
  chat: ChatPort,
  op: Operation,
  approval: Approval,
  message: ChatMessage,
  clickedTs?: string,
): Promise<void> {
  const ts = requestTs(op, approval, clickedTs);
  if (ts === undefined) return;
  await chat.update(op.channel, ts, editCarrier(op, ts, approval.seq, message));
}
