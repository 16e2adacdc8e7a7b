import type { Job } from 'bullmq';
import { showDecision } from '../../src/ops/approval-edit.ts';
import { NonceJobData } from '../../src/queue/job-schemas.ts';
import type { OpsJobDeps } from '../job-context.ts';
import { refreshRoot } from './root-message.ts';

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
    await showDecision(deps.chat, op, approval);
    await refreshRoot(deps, op);
    await deps.audit.record(opId, { actor: 'bot', event: 'approval expired, operation paused', detail: op.steps.find((s) => s.id === approval.step)?.node });
  };
}
