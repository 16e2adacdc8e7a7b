import { setTimeout as sleep } from 'node:timers/promises';
import type { App, BlockAction, ButtonAction, RespondFn } from '@slack/bolt';
import type { Queue } from 'bullmq';
import type { ChatPort } from '../src/chat/chat-port.ts';
import { retriedMessage } from '../src/chat/operation-messages.ts';
import { approvalDecidedMessage, ACTION, operationRootMessage, reviewItems } from '../src/chat/upgrade-messages.ts';
import type { Inventory } from '../src/config/inventory.ts';
import type { Logger } from '../src/log/logger.ts';
import { editCarrier, type Audit } from '../src/ops/audit.ts';
import type { ClusterLock } from '../src/ops/cluster-lock.ts';
import type { Operation } from '../src/ops/operation.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';
import { RUN_JOB } from '../src/queue/job-schemas.ts';
import { outsideWindowRefusal } from '../src/rules/maintenance-window.ts';
import type { Authorizer } from './authorize.ts';
import { cancelOperation } from './cancel-operation.ts';

export interface ActionDeps {
  inventory: Inventory;
  store: OperationStore;
  lock: ClusterLock;
  audit: Audit;
  chat: ChatPort;
  opsQueue: Queue;
  authorizer: Authorizer;
  logger: Logger;
  now: () => Date;
  /** A plan older than this is stale and cannot be started, in ms. */
  planTtlMs: number;
  onCancelled: (op: Operation) => Promise<void>;
}

const VALUE = /^(op-[a-z0-9]{4,40})\.([a-z0-9]{4,40})$/;

/**
 * The operation a button's block names: the bot builds every block that holds buttons as
 * `<kind>-<op>-<nonce>`. A block of another operation than the value's means the payload was
 * put together from two messages. Whether a button of the same operation is still current is
 * for its nonce to say.
 */
export function blockOperation(blockId: string | undefined): string | undefined {
  return /^[a-z]+-(op-[a-z0-9]{4,40})-[a-z0-9]{4,40}$/.exec(blockId ?? '')?.[1];
}

interface Click {
  op: Operation;
  nonce: string;
  /** The message that carried the button. */
  messageTs: string | undefined;
  user: string;
  say: (text: string) => Promise<void>;
}

/** Shared checks of every button: a well-formed value, an operation that exists, the right channel. */
async function loadClick(deps: ActionDeps, body: BlockAction, action: ButtonAction, respond: RespondFn): Promise<Click | undefined> {
  const say = async (text: string): Promise<void> => {
    await respond({ response_type: 'ephemeral', replace_original: false, text });
  };
  const match = VALUE.exec(action.value ?? '');
  if (!match) {
    await say('That button carries no valid operation. Nothing changed.');
    return undefined;
  }
  const op = await deps.store.get(match[1]!);
  if (!op) {
    await say(`This button belongs to operation \`${match[1]!}\`, which the bot does not know. Nothing changed.`);
    return undefined;
  }
  if (body.channel?.id !== op.channel) {
    await say(`\`${op.id}\` belongs to *${op.cluster}*; its buttons work only in <#${op.channel}>. Nothing changed.`);
    return undefined;
  }
  if (!deps.inventory.clusters.some((c) => c.name === op.cluster)) {
    await say(`\`${op.id}\` belongs to *${op.cluster}*, a cluster this bot does not serve. Nothing changed.`);
    return undefined;
  }
  const blockOp = blockOperation(action.block_id);
  if (blockOp !== undefined && blockOp !== op.id) {
    await say('That button does not belong to the message it came from. Nothing changed.');
    return undefined;
  }
  return { op, nonce: match[2]!, messageTs: body.message?.ts, user: body.user.id, say };
}

function clusterOf(deps: ActionDeps, op: Operation) {
  const cluster = deps.inventory.clusters.find((c) => c.name === op.cluster);
  if (!cluster) throw new Error(`cluster ${op.cluster} is no longer in the inventory`);
  return cluster;
}

async function enqueueRun(deps: ActionDeps, op: Operation, jobId: string): Promise<void> {
  const name = RUN_JOB[op.kind];
  if (name === undefined) throw new Error(`operation kind ${op.kind} has no run job`);
  await deps.opsQueue.add(name, { opId: op.id }, { jobId, removeOnComplete: 1000, removeOnFail: 1000 });
}

/** How long a click waits for the bot to store where it posted the plan (it does so as soon as Slack answers). */
const ROOT_SETTLE_MS = 3000;

/** The plan's message once the bot has stored it: a click on a fresh plan can arrive a few ms before. */
async function rootOnceStored(deps: ActionDeps, opId: string): Promise<string | undefined> {
  for (const deadline = Date.now() + ROOT_SETTLE_MS; Date.now() < deadline; await sleep(50)) {
    const rootTs = (await deps.store.get(opId))?.rootTs;
    if (rootTs !== undefined) return rootTs;
  }
  return undefined;
}

async function start(deps: ActionDeps, click: Click): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  if (!(await deps.authorizer.isMember(user, cluster.operators))) return say(`Only operators of *${cluster.name}* may start \`${op.id}\`. Nothing changed.`);
  if (op.state !== 'planned' || op.planNonce !== click.nonce) return say(`\`${op.id}\` is ${op.state}; this Start button is no longer valid. Nothing changed.`);
  // Slack can show copies of a plan whose post it answered with a 5xx; a run starts only from the message the bot keeps up to date.
  if (click.messageTs !== (op.rootTs ?? (await rootOnceStored(deps, op.id)))) return say(`This copy of the plan of \`${op.id}\` is not the one the bot keeps up to date; use the latest plan message. Nothing changed.`);
  if (deps.now().getTime() - Date.parse(op.createdAt) > deps.planTtlMs) {
    return say(`This plan is older than ${Math.round(deps.planTtlMs / 60_000)} minutes and may no longer match the cluster. Run the command again for a fresh plan. Nothing changed.`);
  }
  if (op.rehearsal !== undefined && op.rehearsal.stagingOp === undefined && op.override === undefined) {
    return say(`\`${op.id}\` has no staging rehearsal of ${op.target.version ?? 'its target'} in the records; an approver must click Override first. Nothing changed.`);
  }
  const windowRefusal = outsideWindowRefusal(cluster, deps.now());
  if (windowRefusal !== undefined) return say(`${windowRefusal} Nothing changed.`);
  const lock = await deps.lock.acquire(cluster.name, op.id);
  if (!lock.ok) return say(`*${cluster.name}* is held by \`${lock.heldBy}\`; one mutating operation at a time. Nothing changed.`);
  const startedAt = deps.now().toISOString();
  const { op: running, changed } = await deps.store.update(op.id, (o) =>
    o.state === 'planned' && o.planNonce === click.nonce ? { ...o, state: 'running', startedBy: user, startedAt, planNonce: undefined, confirmedReview: reviewItems(o.kind) } : undefined,
  );
  if (!changed) {
    // A second click on the same Start re-acquires the lock under the same id: the lock then belongs to the started operation.
    if (running.startedAt === undefined) await deps.lock.release(cluster.name, op.id);
    return say(`\`${op.id}\` was already started or cancelled by someone else. Nothing changed.`);
  }
  // Recorded and queued before the root is edited: a Slack outage must not leave a started operation without its run.
  // The edited root says it started; the entry goes to the thread with the first step's reply.
  await deps.audit.note(op.id, { actor: user, event: 'started', detail: `review confirmed: ${running.confirmedReview.join('; ')}` });
  await enqueueRun(deps, running, `${op.id}-start`);
  await deps.chat.update(running.channel, running.rootTs!, operationRootMessage(running));
}

async function cancelPlan(deps: ActionDeps, click: Click): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  if (!(await deps.authorizer.isMember(user, [...cluster.operators, ...cluster.approvers]))) return say(`Only operators and approvers of *${cluster.name}* may cancel. Nothing changed.`);
  if (op.state !== 'planned' || op.planNonce !== click.nonce) return say(`\`${op.id}\` is ${op.state}; this Cancel button is no longer valid. Use \`/talos cancel ${op.id}\`.`);
  const result = await cancelOperation(deps, op.id, user);
  await say(result.reply);
}

async function decide(deps: ActionDeps, click: Click, decision: 'approved' | 'stopped'): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  const approval = op.approvals.find((a) => a.nonce === click.nonce);
  if (!approval) return say(`This approval button is not one \`${op.id}\` is waiting on (a stale or altered button). Nothing changed.`);
  const allowed = decision === 'approved' ? cluster.approvers : [...cluster.approvers, ...cluster.operators];
  if (!(await deps.authorizer.isMember(user, allowed))) {
    return say(`Only ${decision === 'approved' ? 'approvers' : 'operators and approvers'} of *${cluster.name}* may ${decision === 'approved' ? 'approve' : 'stop'} this step. Nothing changed.`);
  }
  if (decision === 'approved' && cluster.requireDistinctApprover && (user === op.startedBy || user === op.requestedBy)) {
    return say(`*${cluster.name}* requires four eyes: the approver may not be the operator who requested or started \`${op.id}\`. Ask another approver. Nothing changed.`);
  }
  const now = deps.now();
  const { op: after, changed } = await deps.store.update(op.id, (o) => {
    const current = o.approvals.find((a) => a.nonce === click.nonce);
    if (!current || current.state !== 'pending' || o.state !== 'awaiting-approval') return undefined;
    if (Date.parse(current.expiresAt) <= now.getTime()) return undefined;
    const approvals = o.approvals.map((a) => (a.nonce === click.nonce ? { ...a, state: decision, by: user, at: now.toISOString() } : a));
    if (decision === 'approved') return { ...o, state: 'running', approvals };
    return { ...o, approvals, state: 'cancelled', endedAt: now.toISOString(), cancelRequestedBy: user, reason: `stopped by <@${user}> at the approval of ${approval.step.replace('node-', '')}` };
  });
  if (!changed) {
    const current = after.approvals.find((a) => a.nonce === click.nonce)!;
    if (current.state === 'pending' && Date.parse(current.expiresAt) <= now.getTime()) return say('This approval request has expired. The operation pauses; ask for approval again from the expired message. Nothing changed.');
    const who = current.by ? ` by <@${current.by}>` : '';
    return say(`This step was already ${current.state}${who}; \`${op.id}\` is ${after.state}. Nothing changed.`);
  }
  // A stopped operation frees its cluster before the messages say so.
  if (decision === 'stopped') await deps.lock.release(op.cluster, op.id);
  const decided = after.approvals.find((a) => a.nonce === click.nonce)!;
  const step = after.steps.find((s) => s.id === decided.step)!;
  // Recorded and queued before the messages are edited: a Slack outage must not leave an approved step without its run.
  // The edited request tells the channel; an approval's entry goes to the thread with the step's next reply.
  const entry = { actor: user, event: decision === 'approved' ? `approved ${step.node ?? step.id}` : `stopped at ${step.node ?? step.id}` };
  let recorded = decision === 'approved' ? await deps.audit.note(op.id, entry) : await deps.audit.record(op.id, entry);
  if (decision === 'approved') await enqueueRun(deps, after, `${op.id}-approved-${click.nonce}`);
  // A click can beat the run to learning where its request was posted (Slack wrote it, then answered 5xx): the
  // clicked message is the request, and its entries are adopted before the edit changes the text they are found by.
  const requestTs = decided.messageTs !== '' ? decided.messageTs : click.messageTs;
  if (decided.messageTs === '') {
    await deps.audit.flush(op.id);
    recorded = (await deps.store.get(op.id)) ?? recorded;
  }
  if (requestTs !== undefined) await deps.chat.update(after.channel, requestTs, editCarrier(recorded, requestTs, decided.seq, approvalDecidedMessage(after, decided, step)));
  // The run repaints the root when it starts the step; a stop ends the operation here.
  if (decision === 'stopped') await deps.chat.update(after.channel, after.rootTs!, operationRootMessage(recorded));
}

async function rollback(deps: ActionDeps, click: Click): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  if (!(await deps.authorizer.isMember(user, [...cluster.operators, ...cluster.approvers]))) return say(`Only operators and approvers of *${cluster.name}* may roll back a node. Nothing changed.`);
  const { op: after, changed } = await deps.store.update(op.id, (o) =>
    o.failure && o.failure.nonce === click.nonce && o.failure.rollback === 'offered' && o.state === 'failed' ? { ...o, failure: { ...o.failure, rollback: 'running' } } : undefined,
  );
  if (!changed) return say(`This rollback was already ${after.failure?.rollback ?? 'not offered'} for \`${op.id}\`. Nothing changed.`);
  await deps.audit.record(op.id, { actor: user, event: `rollback requested for ${after.failure!.node}` });
  await deps.opsQueue.add('node-rollback', { opId: op.id, nonce: click.nonce, by: user }, { jobId: `${op.id}-rollback-${click.nonce}`, removeOnComplete: 1000, removeOnFail: 1000 });
}

async function rerequest(deps: ActionDeps, click: Click): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  if (!(await deps.authorizer.isMember(user, [...cluster.operators, ...cluster.approvers]))) return say(`Only operators and approvers of *${cluster.name}* may resume it. Nothing changed.`);
  const { changed, op: after } = await deps.store.update(op.id, (o) => {
    const latest = o.approvals.at(-1);
    return o.state === 'paused' && latest?.nonce === click.nonce && latest.state === 'expired' ? { ...o, state: 'running' } : undefined;
  });
  if (!changed) return say(`\`${op.id}\` is ${after.state}; this button is no longer valid. Nothing changed.`);
  await deps.audit.record(op.id, { actor: user, event: 'approval requested again' });
  await enqueueRun(deps, after, `${op.id}-resume-${click.nonce}`);
}

/** Retry of a failed step that is safe to run again: operators and approvers; the cluster's lock was never released. */
async function retry(deps: ActionDeps, click: Click): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  if (!(await deps.authorizer.isMember(user, [...cluster.operators, ...cluster.approvers]))) return say(`Only operators and approvers of *${cluster.name}* may retry \`${op.id}\`. Nothing changed.`);
  const at = deps.now().toISOString();
  const { op: after, changed } = await deps.store.update(op.id, (o) => {
    if (o.state !== 'failed' || o.retry?.nonce !== click.nonce || o.retry.state !== 'offered') return undefined;
    const from = o.steps.findIndex((s) => s.id === o.retry!.step);
    if (from < 0) return undefined;
    const steps = o.steps.map((s, i) => (i < from ? s : { ...s, status: 'pending' as const, startedAt: undefined, endedAt: undefined, issuedAt: undefined, detail: undefined }));
    return { ...o, state: 'running', reason: undefined, endedAt: undefined, retry: { ...o.retry, state: 'used' }, steps };
  });
  if (!changed) return say(`\`${op.id}\` is ${after.state}; this Retry button is no longer valid. Nothing changed.`);
  if (click.messageTs !== undefined) await deps.chat.update(after.channel, click.messageTs, retriedMessage(after, user, at));
  await deps.chat.update(after.channel, after.rootTs!, operationRootMessage(after));
  await deps.audit.record(op.id, { actor: user, event: `retry requested from ${after.retry!.step}` });
  await enqueueRun(deps, after, `${op.id}-retry-${click.nonce}`);
}

/** The buttons of an operation. Each acks at once, then re-checks who clicked, where, and whether the button is still current. */
export function registerOperationActions(app: App, deps: ActionDeps): void {
  const handlers: [string, (click: Click) => Promise<void>][] = [
    [ACTION.start, (c) => start(deps, c)],
    [ACTION.cancelPlan, (c) => cancelPlan(deps, c)],
    [ACTION.approve, (c) => decide(deps, c, 'approved')],
    [ACTION.stop, (c) => decide(deps, c, 'stopped')],
    [ACTION.rollback, (c) => rollback(deps, c)],
    [ACTION.rerequest, (c) => rerequest(deps, c)],
    // Apply and its Cancel are the approval of a Kubernetes upgrade's one gated step.
    [ACTION.apply, (c) => decide(deps, c, 'approved')],
    [ACTION.cancelApply, (c) => decide(deps, c, 'stopped')],
    [ACTION.retry, (c) => retry(deps, c)],
  ];
  for (const [actionId, handle] of handlers) {
    app.action<BlockAction<ButtonAction>>(actionId, async ({ ack, body, action, respond }) => {
      await ack();
      const click = await loadClick(deps, body, action, respond);
      if (!click) return;
      deps.logger.info({ op: click.op.id, cluster: click.op.cluster, user: click.user, action: actionId }, 'button clicked');
      await handle(click);
    });
  }
}
