import type { Operation } from '../ops/operation.ts';

/** Who of a cluster's inventory may click a button. */
export type Who = 'operators' | 'approvers' | 'operators-or-approvers';

/**
 * Who may click the buttons of a stop. `handlers/action-permissions.ts` enforces these same
 * declarations, so what the stop says is what a click finds.
 */
export const STOP_BUTTONS_WHO = {
  // A node Talos put back on its previous image is tried again only on an approver's explicit word.
  retry: (op: Operation): Who => (op.retry?.explicit !== undefined ? 'approvers' : 'operators-or-approvers'),
  rollback: 'operators',
  cancel: 'operators-or-approvers',
} as const satisfies Record<string, Who | ((op: Operation) => Who)>;

/** The people a `Who` names, in words: "operators or approvers". */
export function whoInWords(who: Who): string {
  return who === 'operators-or-approvers' ? 'operators or approvers' : who;
}
