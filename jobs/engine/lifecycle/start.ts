import { checkedByBot } from '../../../src/chat/rehearsal-message.ts';
import { operationRootMessage } from '../../../src/chat/operation-root.ts';
import type { Approval, Operation } from '../../../src/ops/operation.ts';
import { operationRefById } from '../../../src/chat/operation-link.ts';
import { enqueueRun, newNonce } from '../../../src/queue/operation-jobs.ts';
import { outsideWindowRefusal } from '../../../src/chat/window-refusal.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { refreshPaged } from '../root-message.ts';
import { fourEyesRefusal } from '../approvals/four-eyes.ts';
import { awaitsPosting } from '../audit.ts';
import { clusterOf, refused, type MoveDeps, type MoveResult } from './deps.ts';

/** What a click on an operation's button carries: the operation as loaded, the button's nonce, who clicked, and the message it came from. */
export interface OperationClick {
  op: Operation;
  nonce: string;
  user: string;
  messageTs: string | undefined;
  /** The values of the plan's checkboxes ticked when the button was clicked (Slack's `state.values`). */
  ticked?: readonly string[];
}

/**
 * How long a click waits for the bot to store where Slack posted the message it came from. Slack
 * shows a message before its answer reaches the bot, so a click on a fresh plan, or on the reply that
 * paged the approvers, can come first. A safety bound, not a race: the wait ends as soon as nothing
 * is being posted any more, whichever way the post ended.
 */
const POSTING_SETTLE_MS = 30_000;

/**
 * Whether `messageTs` is a message the bot keeps up to date for the plan: its root, or a thread
 * reply the audit keeps (the one that paged the approvers; it adopts a copy Slack wrote). While the
 * root or a reply is being posted (not a reply held for a later batch), it waits for that post to be
 * stored before it says no.
 */
async function isKeptMessage(deps: MoveDeps, op: Operation, messageTs: string | undefined): Promise<boolean> {
  const kept = (o: Operation): boolean => o.rootTs === messageTs || o.audit.some((e) => e.ts !== undefined && e.ts === messageTs);
  const posting = (o: Operation): boolean => o.rootTs === undefined || awaitsPosting(o);
  if (messageTs === undefined) return false;
  if (kept(op)) return true;
  if (!posting(op)) return false;
  const seen = await pollUntil(deps.clock, { timeoutMs: POSTING_SETTLE_MS, intervalMs: 50 }, async () => {
    const now = await deps.store.get(op.id);
    if (now === undefined || kept(now)) return { done: true, value: now !== undefined };
    return posting(now) ? { done: false, pending: 'the message is not stored yet' } : { done: true, value: false };
  });
  return seen.ok && seen.value;
}

/**
 * An approver's Start (a Terraform change's Apply) as the approval of the steps it authorises, given on
 * the plan message: spent like any step approval by a failure or a Retry, and bounded in age when its step starts.
 */
function startApprovals(deps: MoveDeps, op: Operation, user: string, at: string): Approval[] {
  if (!deps.policy.startedByApprovers(op.kind)) return [];
  return (deps.policy.startApproves?.(op) ?? []).map((step) => ({
    step,
    nonce: newNonce(),
    messageTs: op.rootTs ?? '',
    requestedAt: op.createdAt,
    expiresAt: new Date(Date.parse(op.createdAt) + deps.planTtlMs).toISOString(),
    state: 'approved',
    by: user,
    at,
  }));
}

/**
 * Start (a Terraform change's Apply): the plan becomes a run. Refused for a stale button, four
 * eyes on an Apply, a copy of the plan, an old plan, a missing rehearsal, a closed window or a
 * held cluster. The lock, the start and its entry, then the run is queued and the root repainted.
 */
export async function start(deps: MoveDeps, click: OperationClick): Promise<MoveResult> {
  const { op, user } = click;
  const cluster = clusterOf(deps, op);
  const byApprovers = deps.policy.startedByApprovers(op.kind);
  if (op.state !== 'planned' || op.planNonce !== click.nonce)
    return refused(
      'stale',
      `\`${op.id}\` is ${op.state}; this ${byApprovers ? 'Apply' : 'Start'} button is no longer valid. Nothing changed.`,
    );
  const fourEyes = byApprovers ? fourEyesRefusal(cluster, op, user, 'apply it') : undefined;
  if (fourEyes !== undefined) return refused('four-eyes', fourEyes);
  // Slack can show copies of a plan whose post it answered with a 5xx; a run starts only from the message the bot keeps up to date.
  // The message that paged the approvers carries the plan's buttons too: a thread reply the audit keeps.
  if (!(await isKeptMessage(deps, op, click.messageTs))) {
    return refused(
      'not-kept-copy',
      `This copy of the plan of \`${op.id}\` is not the one the bot keeps up to date; use the latest plan message. Nothing changed.`,
    );
  }
  if (deps.now().getTime() - Date.parse(op.createdAt) > deps.planTtlMs) {
    return refused(
      'plan-expired',
      `This plan is older than ${Math.round(deps.planTtlMs / 60_000)} minutes and may no longer match the cluster. Run the command again for a fresh plan. Nothing changed.`,
    );
  }
  if (op.rehearsal !== undefined && op.rehearsal.stagingOp === undefined && op.override?.second === undefined) {
    const what = deps.policy.presentation(op.kind).rehearsal?.missing(op) ?? 'no staging rehearsal';
    const who =
      op.override === undefined
        ? 'two approvers must click Override first'
        : `<@${op.override.by}> overrode; a second approver must click Override too`;
    return refused('no-rehearsal', `\`${op.id}\` has ${what} in the records; ${who}. Nothing changed.`);
  }
  // What only a person can check is ticked on the plan itself: a Start without every tick changes nothing.
  const confirmations = deps.policy.presentation(op.kind).startConfirmations?.(op) ?? [];
  const unticked = confirmations.filter((c) => !(click.ticked ?? []).includes(c.value));
  if (unticked.length > 0)
    return refused(
      'unconfirmed',
      `Tick ${unticked.map((c) => `“${c.text}”`).join(' and ')} on the plan of \`${op.id}\` after you checked it, then click ${byApprovers ? 'Apply' : 'Start'} again. Nothing changed.`,
    );
  const windowRefusal = outsideWindowRefusal(cluster, deps.now());
  if (windowRefusal !== undefined) return refused('window', `${windowRefusal} Nothing changed.`);
  // The plan was judged against the cluster as it was then: what may have moved since is asked again before anything starts.
  const changedSince = await deps.startRecheck(op, cluster);
  if (changedSince.length > 0)
    return refused('cluster-changed', `The cluster no longer allows \`${op.id}\` as planned: ${changedSince.join('; ')}. Nothing changed.`);
  const lock = await deps.lock.acquire(cluster.name, op.id);
  if (!lock.ok)
    return refused(
      'locked',
      `*${cluster.name}* is held by ${await operationRefById(deps, lock.heldBy)}; one mutating operation at a time. Nothing changed.`,
    );
  const startedAt = deps.now().toISOString();
  // What the bot's records answered was checked by the bot, not by the person who started: said as such.
  const items = deps.policy.reviewItems(op.kind);
  const byBot = checkedByBot(op, items);
  const review = [...items.filter((i) => !byBot.some((b) => b.item === i)), ...confirmations.map((c) => c.record)];
  const botWords = byBot.map((b) => `${b.item} (${b.found})`);
  // The start and its entry are one write; the edited root says it started, the entry goes to the thread with the first step's reply.
  const { op: running, changed } = await deps.audit.transition(
    op.id,
    {
      actor: user,
      event: byApprovers ? 'applied' : 'started',
      ...(review.length + botWords.length > 0
        ? {
            detail: [
              ...(review.length > 0 ? [`review confirmed: ${review.join('; ')}`] : []),
              ...(botWords.length > 0 ? [`checked by the bot: ${botWords.join('; ')}`] : []),
            ].join('; '),
          }
        : {}),
    },
    (o) =>
      o.state === 'planned' && o.planNonce === click.nonce
        ? {
            ...o,
            state: 'running',
            startedBy: user,
            startedAt,
            planNonce: undefined,
            confirmedReview: review,
            approvals: [...o.approvals, ...startApprovals(deps, o, user, startedAt)],
          }
        : undefined,
    { hold: true },
  );
  if (!changed) {
    // A second click on the same Start re-acquires the lock under the same id: the lock then belongs to the started operation.
    if (running.startedAt === undefined) await deps.lock.release(cluster.name, op.id);
    return refused('already', `\`${op.id}\` was already started or cancelled by someone else. Nothing changed.`);
  }
  // Queued before the root is edited: a Slack outage must not leave a started operation without its run.
  await enqueueRun(deps.opsQueue, op.id, 'start');
  if (running.rootTs !== undefined)
    await deps.chat.update(running.channel, running.rootTs, operationRootMessage(running, deps.policy.presentation(running.kind)));
  // The message that paged the approvers loses its buttons too, and says who applied.
  await refreshPaged(deps, running, deps.policy.presentation(running.kind));
  return { ok: true, op: running };
}

/**
 * Two approvers' explicit word to start a production change that has no staging rehearsal in the
 * records, as the runbook asks: each click is one approver's, the second from another approver. It
 * only unlocks Start; the record says who overrode and when.
 */
export async function overrideRehearsal(deps: MoveDeps, click: OperationClick): Promise<MoveResult> {
  const { op, user } = click;
  const fourEyes = fourEyesRefusal(clusterOf(deps, op), op, user, 'override the staging rehearsal');
  if (fourEyes !== undefined) return refused('four-eyes', fourEyes);
  if (op.override !== undefined && op.override.second === undefined && op.override.by === user)
    return refused(
      'four-eyes',
      `You overrode the missing staging rehearsal of \`${op.id}\` already; a second approver must override too. Nothing changed.`,
    );
  const at = deps.now().toISOString();
  const first = op.override === undefined;
  // The override and its entry are one write; the edited plan shows it, the entry goes to the thread with the next reply.
  const detail = `${deps.policy.presentation(op.kind).rehearsal?.overridden(op) ?? 'no staging rehearsal in the records'} (${first ? 'first of two approvers' : 'second approver'})`;
  const { op: after, changed } = await deps.audit.transition(
    op.id,
    { actor: user, event: 'override: no staging rehearsal', detail },
    (o) => {
      if (o.state !== 'planned' || o.planNonce !== click.nonce || o.rehearsal?.stagingOp !== undefined) return undefined;
      if (first) return o.override === undefined ? { ...o, override: { by: user, at } } : undefined;
      return o.override !== undefined && o.override.second === undefined && o.override.by !== user
        ? { ...o, override: { ...o.override, second: { by: user, at } } }
        : undefined;
    },
    { hold: true },
  );
  if (!changed) {
    const by = after.override
      ? `, already overridden by <@${after.override.by}>${after.override.second ? ` and <@${after.override.second.by}>` : ''}`
      : '';
    return refused('stale', `\`${op.id}\` is ${after.state}${by}. Nothing changed.`);
  }
  if (after.rootTs) await deps.chat.update(after.channel, after.rootTs, operationRootMessage(after, deps.policy.presentation(after.kind)));
  return { ok: true, op: after };
}
