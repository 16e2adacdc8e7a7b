import type { Operation } from '../../../src/ops/operation.ts';
import { clusterOf, refused, type MoveDeps, type MoveResult } from '../lifecycle/deps.ts';
import type { OperationClick } from '../lifecycle/start.ts';
import { fourEyesRefusal } from './four-eyes.ts';

/** States in which an operation may still ask for approvals: a taking changes nothing once it ended. */
const ASKING: readonly Operation['state'][] = ['running', 'awaiting-approval', 'waiting-window', 'paused'];

/**
 * An approver's [Take it] on an approval request: the operation's later requests page only them (its
 * reminder near expiry pages every approver again, see `remindApprovers`), so the others may sleep.
 * Authorized as Approve is: the approvers, and four eyes keep the requester and the starter from taking
 * what they may not approve. The taking and its entry are one compare-and-set on the stored operation,
 * so a restart or another replica pages the same person. A later taker replaces an earlier one.
 */
export async function takeApprovals(deps: MoveDeps, click: OperationClick): Promise<MoveResult> {
  const { op, user } = click;
  if (!op.approvals.some((a) => a.nonce === click.nonce))
    return refused('stale', `This approval button is not one \`${op.id}\` is waiting on (a stale or altered button). Nothing changed.`);
  // Where an approver's Apply started it, that approver is the second pair of eyes and may approve again; the requester never.
  const starter = deps.policy.startedByApprovers(op.kind) ? { ...op, startedBy: undefined } : op;
  const fourEyes = fourEyesRefusal(clusterOf(deps, op), starter, user, "take this operation's approvals");
  if (fourEyes !== undefined) return refused('four-eyes', fourEyes);
  const refusal = (o: Operation): MoveResult | undefined => {
    if (!ASKING.includes(o.state)) return refused('stale', `\`${o.id}\` is ${o.state}; it asks for no more approvals. Nothing changed.`);
    if (o.approvalsTaken?.by === user)
      return refused('already', `You already took the approvals of \`${o.id}\`: its requests page only you. Nothing changed.`);
    return undefined;
  };
  const early = refusal(op);
  if (early !== undefined) return early;
  const before = op.approvalsTaken?.by;
  const at = deps.now().toISOString();
  const { op: after, changed } = await deps.audit.transition(
    op.id,
    {
      actor: user,
      event: `approvals taken by <@${user}>${before === undefined ? '' : ` from <@${before}>`}`,
      detail: 'later approval requests page only this approver; every approver is paged again when a request nears its expiry',
    },
    (o) => (refusal(o) === undefined && o.approvalsTaken?.by === before ? { ...o, approvalsTaken: { by: user, at } } : undefined),
  );
  if (!changed) return refusal(after) ?? refused('stale', `\`${op.id}\` changed meanwhile; look at it and click again. Nothing changed.`);
  return {
    ok: true,
    op: after,
    reply: `You took the approvals of \`${after.id}\`: its later requests page only you, and every approver of *${after.cluster}* is paged again only when a request nears its expiry. A request that waits now still needs your Approve.`,
  };
}
