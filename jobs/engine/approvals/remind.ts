import { approvalReminderMessage } from '../../../src/chat/approval-messages.ts';
import type { Approval, Operation } from '../../../src/ops/operation.ts';
import type { ClusterConfig } from '../../../src/config/inventory.ts';
import { operationCluster, type OpsJobDeps } from '../job-context.ts';
import { approversToPage, stillToApprove } from './four-eyes.ts';

export const APPROVAL_REMINDER_JOB_NAME = 'approval-reminder';

/** Whether the request still waits for a person: pending, its operation waiting on it, not yet expired or reminded. */
function unanswered(op: Operation, nonce: string, now: Date): boolean {
  const approval = op.approvals.find((a) => a.nonce === nonce);
  return (
    approval?.state === 'pending' &&
    op.state === 'awaiting-approval' &&
    approval.remindedAt === undefined &&
    Date.parse(approval.expiresAt) > now.getTime()
  );
}

/**
 * `APPROVAL_REMINDER_MINUTES` before a request expires: if nobody answered it yet, one reply in
 * its thread, broadcast to the channel, mentions the approvers again. The reminder and its mark
 * on the approval are one write, so a job run twice reminds once.
 */
export async function remindApprovers(
  deps: Pick<OpsJobDeps, 'store' | 'audit' | 'chat' | 'inventory' | 'now' | 'presentations'>,
  opId: string,
  nonce: string,
): Promise<void> {
  const now = deps.now();
  const op = await deps.store.get(opId);
  if (op === undefined || !unanswered(op, nonce, now)) return;
  const approval = op.approvals.find((a) => a.nonce === nonce)!;
  const step = op.steps.find((s) => s.id === approval.step);
  if (step === undefined) return;
  const cluster = operationCluster(deps.inventory, op);
  // A link helps the channel find the request; without one the reminder still says where it is.
  const link = approval.messageTs === '' ? undefined : await deps.chat.permalink(op.channel, approval.messageTs).catch(() => undefined);
  await deps.audit.record(
    opId,
    { actor: 'bot', event: `approval reminder: ${step.node ?? step.id}`, detail: `expires ${approval.expiresAt}` },
    (o) => ({
      ...approvalReminderMessage(o, approval, step, remindedApprovers(cluster, o, approval), link, deps.presentations(o.kind), now),
      broadcast: true,
    }),
    (o) =>
      unanswered(o, nonce, now)
        ? { ...o, approvals: o.approvals.map((a) => (a.nonce === nonce ? { ...a, remindedAt: now.toISOString() } : a)) }
        : undefined,
  );
}

/**
 * Whom a reminder calls: every approver four eyes let approve, also where one took the operation's approvals (the
 * taker did not answer in time); a request that needs several approvers leaves out the requester, the starter and those who approved.
 */
function remindedApprovers(cluster: ClusterConfig, op: Operation, approval: Approval): string[] {
  return approval.needed === undefined ? approversToPage(cluster, op) : stillToApprove(cluster, op, approval.given ?? []);
}
