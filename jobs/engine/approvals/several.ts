import { approvalPartialMessage, approvalsPage } from '../../../src/chat/approval-messages.ts';
import type { Approval, Operation } from '../../../src/ops/operation.ts';
import { enqueueRun } from '../../../src/queue/operation-jobs.ts';
import { clusterOf, notDecided, refused, type MoveDeps, type MoveResult } from '../lifecycle/deps.ts';
import type { OperationClick } from '../lifecycle/start.ts';
import { windowRefusalFor } from '../lifecycle/window.ts';
import { showDecision, showPartial } from './edit.ts';
import { stillToApprove } from './four-eyes.ts';

/** `2` as a person reads it in a sentence about approvers. */
function count(n: number): string {
  return ['no', 'one', 'two', 'three', 'four'][n] ?? String(n);
}

/**
 * An approval of a step that needs several distinct approvers (`Playbook.approvalsNeeded`). Each
 * click is one compare-and-set on the request's list of approvals given: the list it saw must be the
 * one stored, so two approvers clicking at once, a second replica or a restart see one list. Until the
 * last approval the operation keeps waiting: the click is recorded, the card says who approved and
 * that another approver is needed, and those still able to approve are paged. The last one decides
 * the request as a single approval does. Four eyes always hold here: neither the requester nor the
 * starter approves, and nobody approves twice.
 */
export async function approveOneOfSeveral(deps: MoveDeps, click: OperationClick, needed: number): Promise<MoveResult> {
  const { user } = click;
  const cluster = clusterOf(deps, click.op);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const op = attempt === 0 ? click.op : await deps.store.get(click.op.id);
    const approval = op?.approvals.find((a) => a.nonce === click.nonce);
    if (op === undefined || approval === undefined)
      return refused('stale', `This approval button is not one \`${click.op.id}\` is waiting on. Nothing changed.`);
    if (user === op.requestedBy || user === op.startedBy) {
      return refused(
        'four-eyes',
        `This step needs ${count(needed)} approvers of *${cluster.name}* other than the person who requested or started \`${op.id}\`; you did, so other approvers must approve it. Nothing changed.`,
      );
    }
    const given = approval.given ?? [];
    if (given.some((g) => g.by === user)) {
      return refused(
        'already',
        `You already approved this step (${given.length} of ${needed}); it needs ${count(needed)} different approvers, so another approver of *${cluster.name}* must approve it. Nothing changed.`,
      );
    }
    const windowRefusal = windowRefusalFor(deps, op, approval.step);
    if (windowRefusal !== undefined) return refused('window', windowRefusal);
    const result = await recordOne(deps, click, op, approval, needed);
    if (result !== 'moved') return result;
  }
  return refused(
    'stale',
    'Other approvals arrived at the same moment; look at the request and click again if it still waits. Nothing changed.',
  );
}

/** One attempt: the click written against the list of approvals it saw; `moved` when another click got in first. */
async function recordOne(
  deps: MoveDeps,
  click: OperationClick,
  op: Operation,
  approval: Approval,
  needed: number,
): Promise<MoveResult | 'moved'> {
  const { user } = click;
  const now = deps.now();
  const at = now.toISOString();
  const seen = approval.given ?? [];
  const given = [...seen, { by: user, at }];
  const last = given.length >= needed;
  const node = op.steps.find((s) => s.id === approval.step)?.node ?? approval.step;
  let moved = false;
  const change = (o: Operation): Operation | undefined => {
    const current = o.approvals.find((a) => a.nonce === click.nonce);
    if (!current || current.state !== 'pending' || o.state !== 'awaiting-approval') return undefined;
    if (Date.parse(current.expiresAt) <= now.getTime()) return undefined;
    // The compare: the approvals given are still those this click saw.
    if (JSON.stringify(current.given ?? []) !== JSON.stringify(seen)) {
      moved = true;
      return undefined;
    }
    const decided: Approval = last ? { ...current, given, needed, state: 'approved', by: user, at } : { ...current, given, needed };
    const approvals = o.approvals.map((a) => (a.nonce === click.nonce ? decided : a));
    return last ? { ...o, state: 'running', approvals } : { ...o, approvals };
  };
  const entry = { actor: user, event: `approved ${node} (${given.length} of ${needed})` };
  if (last) {
    const { op: after, changed } = await deps.audit.transition(op.id, entry, change, { hold: true });
    if (!changed) return moved ? 'moved' : notDecided(click.nonce, after, deps.now());
    await enqueueRun(deps.opsQueue, op.id, `approved-${click.nonce}`);
    const decided = after.approvals.find((a) => a.nonce === click.nonce)!;
    await showDecision(deps.chat, after, decided, deps.policy.presentation(after.kind), click.messageTs);
    return { ok: true, op: after };
  }
  const cluster = clusterOf(deps, op);
  const paged = stillToApprove(cluster, op, given);
  const step = op.steps.find((s) => s.id === approval.step);
  const presentation = deps.policy.presentation(op.kind);
  const after = await deps.audit.record(
    op.id,
    { ...entry, detail: `${needed - given.length} more approver${needed - given.length === 1 ? '' : 's'} needed` },
    (o) => ({ ...approvalsPage(o, approval, step, given, needed, paged, presentation), broadcast: true }),
    change,
  );
  const current = after.approvals.find((a) => a.nonce === click.nonce);
  if (!current?.given?.some((g) => g.by === user && g.at === at)) return moved ? 'moved' : notDecided(click.nonce, after, deps.now());
  if (step !== undefined)
    await showPartial(deps.chat, after, current, approvalPartialMessage(after, current, step, presentation, paged), click.messageTs);
  return {
    ok: true,
    op: after,
    reply: `Your approval is recorded: ${given.length} of ${needed}. ${needed - given.length === 1 ? 'A second approver' : 'More approvers'} of *${cluster.name}* must approve before this step runs.`,
  };
}
