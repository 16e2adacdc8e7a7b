import type { Approval, Operation } from './operation.ts';

/**
 * The rules of an operation's life that hold on every path into it (a button, a command, a
 * run resumed after a crash): pure functions over the stored operation, so the handlers that
 * take a click and the engine that walks the steps apply the same ones.
 */

/**
 * Why a cancel is refused now, or undefined when the operation may be cancelled: the kind's own
 * refusal (`kindRefusal`, e.g. a rollback whose node is rebooting), never once the operation failed.
 */
export function cancelRefusal(op: Operation, kindRefusal: ((op: Operation) => string | undefined) | undefined): string | undefined {
  if (op.state === 'failed') return undefined;
  return kindRefusal?.(op);
}

/**
 * The operation with every approval given for `stepIds` spent: those steps ask a person again before they run.
 * An approval that covers the whole operation (`approvalScope: operation`) is spent too: after a failure or a
 * Retry, the next step that asks one asks a person again.
 */
export function spendApprovals(op: Operation, stepIds: readonly string[]): Operation {
  const spent = (a: Approval): boolean => a.state === 'approved' && (stepIds.includes(a.step) || a.scope === 'operation');
  const approvals = op.approvals.map((a): Approval => (spent(a) ? { ...a, state: 'spent' } : a));
  return { ...op, approvals };
}

/**
 * A Retry: the steps from the one it re-runs go back to pending, their approvals are spent
 * (a retried approval-gated step needs a fresh approval), and the offer is used. Undefined
 * when this Retry is not the current offer.
 */
export function retried(op: Operation, nonce: string): Operation | undefined {
  if (op.state !== 'failed' || op.retry?.nonce !== nonce || op.retry.state !== 'offered') return undefined;
  const from = op.steps.findIndex((s) => s.id === op.retry!.step);
  if (from < 0) return undefined;
  const reset = op.steps.slice(from).map((s) => s.id);
  // Resumed by observation, the retried step keeps what it asked of its node: it looks before it asks again.
  const observe = op.retry.resume === 'observe';
  const steps = op.steps.map((s, i) =>
    i < from
      ? s
      : {
          ...s,
          status: 'pending' as const,
          startedAt: undefined,
          endedAt: undefined,
          detail: undefined,
          windowOverride: undefined,
          ...(observe && i === from ? {} : { issuedAt: undefined, issuedBootId: undefined }),
        },
  );
  // A Retry is a decision to go on: a cancel asked for before the failure does not end the retried run.
  return {
    ...spendApprovals(op, reset),
    state: 'running',
    reason: undefined,
    endedAt: undefined,
    cancelRequestedBy: undefined,
    retry: { ...op.retry, state: 'used' },
    steps,
  };
}
