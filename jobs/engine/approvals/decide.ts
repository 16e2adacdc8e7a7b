import { operationRootMessage } from '../../../src/chat/operation-root.ts';
import { enqueueEnded, enqueueRun } from '../../../src/queue/operation-jobs.ts';
import { clusterOf, notDecided, refused, type MoveDeps, type MoveResult } from '../lifecycle/deps.ts';
import type { OperationClick } from '../lifecycle/start.ts';
import { windowRefusalFor } from '../lifecycle/window.ts';
import { showDecision } from './edit.ts';
import { fourEyesRefusal } from './four-eyes.ts';
import { approveOneOfSeveral } from './several.ts';

/**
 * A person's answer to an approval request (Approve or Stop; a Kubernetes upgrade's Apply or
 * Cancel). An approval is refused under four eyes and outside the window. The decision and its
 * entry are one write; an approval queues the step's run, a stop ends the operation, frees its
 * cluster and queues its record; then the request shows the decision.
 */
export async function decideApproval(
  deps: MoveDeps,
  click: OperationClick,
  decision: 'approved' | 'stopped',
  reason?: string,
): Promise<MoveResult> {
  const { op, user } = click;
  const approval = op.approvals.find((a) => a.nonce === click.nonce);
  if (!approval)
    return refused('stale', `This approval button is not one \`${op.id}\` is waiting on (a stale or altered button). Nothing changed.`);
  if (decision === 'approved') {
    // A step that needs several distinct approvers (an etcd restore's reset) has a path of its own: each click is one of them.
    const needed = deps.policy.approvalsNeeded?.(op, approval.step) ?? 1;
    if (needed > 1) return approveOneOfSeveral(deps, click, needed);
    // Where an approver's Apply started it, that approver is the second pair of eyes and may decide again; the requester never.
    const starter = deps.policy.startedByApprovers(op.kind) ? { ...op, startedBy: undefined } : op;
    const fourEyes = fourEyesRefusal(clusterOf(deps, op), starter, user, 'approve this step');
    if (fourEyes !== undefined) return refused('four-eyes', fourEyes);
    const windowRefusal = windowRefusalFor(deps, op, approval.step);
    if (windowRefusal !== undefined) return refused('window', windowRefusal);
  }
  // What only a person can check is ticked on the request itself: an approval without every tick changes nothing.
  const step = op.steps.find((s) => s.id === approval.step);
  const confirmations =
    decision === 'approved' && step !== undefined ? (deps.policy.presentation(op.kind).approvalConfirmations?.(op, step) ?? []) : [];
  const unticked = confirmations.filter((c) => !(click.ticked ?? []).includes(c.value));
  if (unticked.length > 0)
    return refused(
      'unconfirmed',
      `Tick ${unticked.map((c) => `“${c.text}”`).join(' and ')} on the approval request of \`${op.id}\` after you checked it, then click Approve again. Nothing changed; the request still waits.`,
    );
  const confirmed = confirmations.map((c) => c.record);
  const now = deps.now();
  const node = step?.node ?? approval.step;
  // The decision and its entry are one write: a bot that dies right after the click cannot lose the entry.
  // A stop's reason, as the person gave it, goes into the audit and onto the approval and the operation.
  const why = decision === 'stopped' && reason !== undefined && reason.trim() !== '' ? reason.trim() : undefined;
  const entry = {
    actor: user,
    event: decision === 'approved' ? `approved ${node}` : `stopped at ${node}`,
    ...(why === undefined ? {} : { detail: `reason: ${why}` }),
    ...(confirmed.length > 0 ? { detail: `confirmed: ${confirmed.join('; ')}` } : {}),
  };
  const { op: after, changed } = await deps.audit.transition(
    op.id,
    entry,
    (o) => {
      const current = o.approvals.find((a) => a.nonce === click.nonce);
      if (!current || current.state !== 'pending' || o.state !== 'awaiting-approval') return undefined;
      if (Date.parse(current.expiresAt) <= now.getTime()) return undefined;
      const approvals = o.approvals.map((a) =>
        a.nonce === click.nonce
          ? {
              ...a,
              state: decision,
              by: user,
              at: now.toISOString(),
              ...(why === undefined ? {} : { reason: why }),
              ...(confirmed.length > 0 ? { confirmed } : {}),
            }
          : a,
      );
      if (decision === 'approved') return { ...o, state: 'running', approvals };
      return {
        ...o,
        approvals,
        state: 'cancelled',
        endedAt: now.toISOString(),
        cancelRequestedBy: user,
        reason: `stopped by <@${user}> at the approval of ${approval.step.replace('node-', '')}${why === undefined ? '' : `: ${why}`}`,
      };
    },
    { hold: decision === 'approved' },
  );
  if (!changed) return notDecided(click.nonce, after, now);
  // A stopped operation frees its cluster before its messages are edited, and gets its record.
  if (decision === 'stopped') {
    await deps.lock.release(op.cluster, op.id);
    await enqueueEnded(deps.opsQueue, after);
  }
  const decided = after.approvals.find((a) => a.nonce === click.nonce)!;
  let recorded = after;
  // Queued before the messages are edited: a Slack outage must not leave an approved step without its run. The edited
  // request tells the channel; an approval's entry goes to the thread with the step's next reply, a stop's went now.
  if (decision === 'approved') await enqueueRun(deps.opsQueue, op.id, `approved-${click.nonce}`);
  // A click can beat the run to learning where its request was posted (Slack wrote it, then answered 5xx): the
  // clicked message is the request, and its entries are adopted before the edit changes the text they are found by.
  if (decided.messageTs === '') {
    await deps.audit.flush(op.id);
    recorded = (await deps.store.get(op.id)) ?? recorded;
  }
  await showDecision(deps.chat, recorded, decided, deps.policy.presentation(recorded.kind), click.messageTs);
  // The run repaints the root when it starts the step; a stop ends the operation here.
  if (decision === 'stopped' && recorded.rootTs !== undefined)
    await deps.chat.update(after.channel, recorded.rootTs, operationRootMessage(recorded, deps.policy.presentation(recorded.kind)));
  return { ok: true, op: recorded };
}

/** An approver asks again after a request expired: the paused operation runs, and its run posts a fresh request. */
export async function rerequestApproval(deps: MoveDeps, click: OperationClick): Promise<MoveResult> {
  const { op, user } = click;
  const { changed, op: after } = await deps.audit.transition(op.id, { actor: user, event: 'approval requested again' }, (o) => {
    const latest = o.approvals.at(-1);
    return o.state === 'paused' && latest?.nonce === click.nonce && latest.state === 'expired' ? { ...o, state: 'running' } : undefined;
  });
  if (!changed) return refused('stale', `\`${op.id}\` is ${after.state}; this button is no longer valid. Nothing changed.`);
  await enqueueRun(deps.opsQueue, op.id, `resume-${click.nonce}`);
  return { ok: true, op: after };
}
