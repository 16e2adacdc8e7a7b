/** The action id of every button the bot posts; the handlers register one listener per id. */
export const ACTION = {
  start: 'talos-op-start',
  cancelPlan: 'talos-op-cancel',
  approve: 'talos-step-approve',
  stop: 'talos-step-stop',
  rollback: 'talos-node-rollback',
  rerequest: 'talos-step-rerequest',
  /** An approval request's [Take it]: the clicking approver takes the operation's later requests. */
  take: 'talos-step-take',
  apply: 'talos-k8s-apply',
  cancelApply: 'talos-k8s-cancel',
  retry: 'talos-op-retry',
  windowOverride: 'talos-window-override',
  planAgain: 'talos-plan-again',
  /** The root's status board: stop the running operation once its current step (node) ends. */
  stopAfter: 'talos-op-stop-after',
  /** The plan's checkboxes the starter ticks before Start (Slack sends their state with the Start click). */
  startConfirm: 'talos-op-start-confirm',
} as const;

/** The approver's override of a missing staging rehearsal, on the plan of an operation. */
export const OVERRIDE_ACTION = 'talos-op-override';

/** A button's value: the operation and the nonce of the message that carries the button. */
export function buttonValue(opId: string, nonce: string): string {
  return `${opId}.${nonce}`;
}

/** The nonce of a Plan again button: one per operation, whose first click is the one that counts. */
export const PLAN_AGAIN_NONCE = 'replan';

/** [Run the gate again] on a failed health gate's verdict: not an operation's button, so outside `ACTION`. */
export const GATE_AGAIN_ACTION = 'talos-gate-again';

/** The value of [Run the gate again]: the cluster, and the gate job whose verdict carries the button. */
export function gateAgainValue(cluster: string, gateJob: string): string {
  return `${cluster}/${gateJob}`;
}

/** The cluster and gate job of a [Run the gate again] value; undefined for anything the bot did not build. */
export function parseGateAgainValue(value: string | undefined): { cluster: string; gateJob: string } | undefined {
  const match = /^([a-z0-9][a-z0-9-]{0,62})\/([A-Za-z0-9_.-]{1,200})$/.exec(value ?? '');
  return match ? { cluster: match[1]!, gateJob: match[2]! } : undefined;
}

/** The buttons of an operation's entry in `/talos status`; each runs the command of the same name. */
export const STATUS_ACTION = {
  cancel: 'talos-status-cancel',
  record: 'talos-status-record',
  /** A link button to the operation's thread: Slack opens the link and still sends the click, which is only acked. */
  open: 'talos-status-open',
} as const;

/**
 * The buttons of a cluster on the Home tab, shown to its operators: each runs, for the cluster
 * named in its value, the `/talos` command it stands for, or opens that command's guided form.
 */
export const HOME_ACTION = {
  gate: 'talos-home-gate',
  upgradeTalos: 'talos-home-upgrade-talos',
  upgradeK8s: 'talos-home-upgrade-k8s',
  snapshot: 'talos-home-snapshot',
} as const;

/** [Sign off] on a `/talos gates` reply of a gate only a person can judge: an approver's word, with evidence. */
export const SIGN_OFF_ACTION = 'talos-gate-sign-off';

/** The value of [Sign off]: the cluster, the gate, and the gates job whose report carries the button. */
export function signOffValue(cluster: string, gate: string, gatesJob: string): string {
  return `${cluster}/${gate}/${gatesJob}`;
}

/** The parts of a [Sign off] value; undefined for anything the bot did not build. */
export function parseSignOffValue(value: string | undefined): { cluster: string; gate: string; gatesJob: string } | undefined {
  const match = /^([a-z0-9][a-z0-9-]{0,62})\/([a-z0-9-]{1,64})\/([A-Za-z0-9_.-]{1,200})$/.exec(value ?? '');
  return match ? { cluster: match[1]!, gate: match[2]!, gatesJob: match[3]! } : undefined;
}
