/** The action id of every button the bot posts; the handlers register one listener per id. */
export const ACTION = {
  start: 'talos-op-start',
  cancelPlan: 'talos-op-cancel',
  approve: 'talos-step-approve',
  stop: 'talos-step-stop',
  rollback: 'talos-node-rollback',
  rerequest: 'talos-step-rerequest',
  apply: 'talos-k8s-apply',
  cancelApply: 'talos-k8s-cancel',
  retry: 'talos-op-retry',
  windowOverride: 'talos-window-override',
  planAgain: 'talos-plan-again',
  /** The root's status board: stop the running operation once its current step (node) ends. */
  stopAfter: 'talos-op-stop-after',
} as const;

/** The approver's override of a missing staging rehearsal, on the plan of an operation. */
export const OVERRIDE_ACTION = 'talos-op-override';

/** A button's value: the operation and the nonce of the message that carries the button. */
export function buttonValue(opId: string, nonce: string): string {
  return `${opId}.${nonce}`;
}

/** The nonce of a Plan again button: one per operation, whose first click is the one that counts. */
export const PLAN_AGAIN_NONCE = 'replan';
