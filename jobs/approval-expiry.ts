import type { Job } from 'bullmq';
import { approvalDecidedMessage, operationRootMessage } from '../src/chat/upgrade-messages.ts';
import { editCarrier } from '../src/ops/audit.ts';
import { NonceJobData } from '../src/queue/job-schemas.ts';
import type { OpsJobDeps } from './job-context.ts';

/**
 * Fires when an approval request outlives its time: the operation pauses (nothing is
 * touched), the request is marked expired, and an approver can ask again.
 */
export function createApprovalExpiryJob(deps: OpsJobDeps) {
  return async (job: Job): Promise<void> => {
    const { opId, nonce } = NonceJobData.parse(job.data);
    const now = deps.now();
    const { op, changed } = await deps.store.update(opId, (o) => {
      const approval = o.approvals.find((a) => a.nonce === nonce);
      if (!approval || approval.state !== 'pending' || o.state !== 'awaiting-approval') return undefined;
      if (Date.parse(approval.expiresAt) > now.getTime()) return undefined;
      return { ...o, state: 'paused', approvals: o.approvals.map((a) => (a.nonce === nonce ? { ...a, state: 'expired' as const, at: now.toISOString() } : a)) };
    });
    if (!changed) return;
    const approval = op.approvals.find((a) => a.nonce === nonce)!;
    const step = op.steps.find((s) => s.id === approval.step)!;
    await deps.chat.update(op.channel, approval.messageTs, editCarrier(op, approval.messageTs, approval.seq, approvalDecidedMessage(op, approval, step)));
    if (op.rootTs) await deps.chat.update(op.channel, op.rootTs, operationRootMessage(op));
    await deps.audit.record(opId, { actor: 'bot', event: 'approval expired, operation paused', detail: step.node });
  };
}
