import type { OperationState } from './operation.ts';

/**
 * An operation's states and the moves between them, declared once. The operation store refuses
 * any write that makes a move not listed here, so no path (a click, a job, a resumed run) can
 * take an operation somewhere its life does not go. A write that keeps the state is no move.
 */
export const TRANSITIONS: Readonly<Record<OperationState, readonly OperationState[]>> = {
  // The preflight's verdict; a run-at-once operation (a rollback, a snapshot) starts with its request; a cancel may come first.
  preflight: ['refused', 'planned', 'running', 'cancelled'],
  // Start (or Apply); a cancel, or the plan expiring.
  planned: ['running', 'cancelled'],
  // An approval asked, a window waited for, the first failure, the last step done, a cancel between steps.
  // A snapshot's run goes only to `failed`, `completed` or `cancelled`: it asks no approval and no window holds it.
  running: ['awaiting-approval', 'waiting-window', 'failed', 'completed', 'cancelled'],
  // Approved; the request expired; the walk stopped (its stop is guarded by the walking states); stopped or cancelled.
  'awaiting-approval': ['running', 'paused', 'failed', 'cancelled'],
  // The window opened or an approver overrode it; the walk stopped; a cancel.
  'waiting-window': ['running', 'failed', 'cancelled'],
  // An approver asked for approval again; a cancel.
  paused: ['running', 'cancelled'],
  // Retry; a cancel once the failure was handled (a failed snapshot offers no Retry: it is only cancelled).
  failed: ['running', 'cancelled'],
  refused: [],
  completed: [],
  cancelled: [],
};

/** The state an operation is created in: its request's preflight, which plans it or starts its run. */
export const INITIAL: readonly OperationState[] = ['preflight'];

/** Nothing runs: a cancel ends the operation at once (a running one is asked to stop between steps instead). */
export const WAITING: readonly OperationState[] = ['preflight', 'planned', 'awaiting-approval', 'waiting-window', 'paused', 'failed'];

/** A run walks the operation's steps. */
export const WALKING: readonly OperationState[] = ['running', 'awaiting-approval', 'waiting-window'];

/**
 * The operation holds its cluster's lock: from its start until it ends; a stopped one keeps it for a Retry or a Rollback.
 * Only for the kinds whose playbook holds one: a snapshot never does.
 */
export const HOLDING_LOCK: readonly OperationState[] = ['running', 'awaiting-approval', 'waiting-window', 'paused', 'failed'];

/** The operation has ended for good: it never moves again, and retention may let it go. */
export const FINISHED: readonly OperationState[] = ['refused', 'completed', 'cancelled'];

/** Not finished: running, or waiting for a person, a window or its plan's Start. */
export const ACTIVE: readonly OperationState[] = [
  'preflight',
  'planned',
  'running',
  'awaiting-approval',
  'waiting-window',
  'paused',
  'failed',
];

/** Ended without completing: a Terraform change in one of these may be planned again. */
export const ENDED_UNDONE: readonly OperationState[] = ['refused', 'failed', 'cancelled'];

/** Whether the machine lets an operation go from `from` to `to`; staying is always allowed. */
export function canTransition(from: OperationState, to: OperationState): boolean {
  return from === to || TRANSITIONS[from].includes(to);
}

/** Thrown by the store for a write that makes a move the machine does not allow: a bug, never retried. */
export class ForbiddenTransition extends Error {
  readonly code = 'forbidden-transition';
  readonly from: OperationState;
  readonly to: OperationState;

  constructor(opId: string, from: OperationState, to: OperationState) {
    super(`operation ${opId} cannot go from ${from} to ${to}`);
    this.name = 'ForbiddenTransition';
    this.from = from;
    this.to = to;
  }
}
