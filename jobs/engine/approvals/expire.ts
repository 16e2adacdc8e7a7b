import type { OpsJobDeps } from '../job-context.ts';
import { refreshRoot } from '../root-message.ts';
import { showDecision } from './edit.ts';

export const APPROVAL_EXPIRY_JOB_NAME = 'approval-expiry';

/**
 * An approval request that outlived its time: the operation pauses (nothing is touched), the
 * request is marked expired and loses its buttons, and an approver can ask again. Only a request
 * still pending past its expiry, on an operation still waiting on it, expires.
 */
export async function expireApproval(
  deps: Pick<OpsJobDeps, 'store' | 'audit' | 'chat' | 'logger' | 'now' | 'presentations'>,
  opId: string,
  nonce: string,
): Promise<void> {
  const now = deps.now();
  const { op, changed } = await deps.store.update(opId, (o) => {
    const approval = o.approvals.find((a) => a.nonce === nonce);
    if (!approval || approval.state !== 'pending' || o.state !== 'awaiting-approval') return undefined;
    if (Date.parse(approval.expiresAt) > now.getTime()) return undefined;
    return {
      ...o,
      state: 'paused',
      approvals: o.approvals.map((a) => (a.nonce === nonce ? { ...a, state: 'expired' as const, at: now.toISOString() } : a)),
    };
  });
  if (!changed) return;
  const approval = op.approvals.find((a) => a.nonce === nonce)!;
  await showDecision(deps.chat, op, approval, deps.presentations(op.kind));
  await refreshRoot(deps, op);
  await deps.audit.record(opId, {
    actor: 'bot',
    event: 'approval expired, operation paused',
    detail: op.steps.find((s) => s.id === approval.step)?.node,
  });
}
