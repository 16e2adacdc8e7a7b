import { setTimeout as sleep } from 'node:timers/promises';
import type { App, BlockAction, ButtonAction, RespondFn } from '@slack/bolt';
import type { Queue } from 'bullmq';
import type { ChatPort } from '../src/chat/chat-port.ts';
import { retriedMessage } from '../src/chat/stop-messages.ts';
import { ACTION, PLAN_AGAIN_NONCE } from '../src/chat/buttons.ts';
import { operationRootMessage, reviewItems } from '../src/chat/operation-root.ts';
import type { Inventory } from '../src/config/inventory.ts';
import type { Logger } from '../src/log/logger.ts';
import { showDecision } from '../src/ops/approval-edit.ts';
import type { Audit } from '../src/ops/audit.ts';
import type { ClusterLock } from '../src/ops/cluster-lock.ts';
import { newOperation, newOperationId, type Operation } from '../src/ops/operation.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';
import { fourEyesRefusal, heldByWindows, retried, startedByApprovers } from '../src/ops/transitions.ts';
import { enqueueEnded, enqueuePreflight, enqueueRun } from '../src/queue/operation-jobs.ts';
import { outsideWindowRefusal } from '../src/chat/window-refusal.ts';
import type { Authorizer } from './authorize.ts';
import { cancelOperation } from '../src/ops/cancel-operation.ts';
import { operationRefById } from '../src/ops/thread-link.ts';

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
  const byApprovers = startedByApprovers(op.kind);
  const verb = byApprovers ? 'apply' : 'start';
  if (!(await deps.authorizer.isMember(user, byApprovers ? cluster.approvers : cluster.operators))) {
    return say(`Only ${byApprovers ? 'approvers' : 'operators'} of *${cluster.name}* may ${verb} \`${op.id}\`. Nothing changed.`);
  }
  if (op.state !== 'planned' || op.planNonce !== click.nonce) return say(`\`${op.id}\` is ${op.state}; this ${byApprovers ? 'Apply' : 'Start'} button is no longer valid. Nothing changed.`);
  const fourEyes = byApprovers ? fourEyesRefusal(cluster, op, user, 'apply it') : undefined;
  if (fourEyes !== undefined) return say(fourEyes);
  // Slack can show copies of a plan whose post it answered with a 5xx; a run starts only from the message the bot keeps up to date.
  if (click.messageTs !== (op.rootTs ?? (await rootOnceStored(deps, op.id)))) return say(`This copy of the plan of \`${op.id}\` is not the one the bot keeps up to date; use the latest plan message. Nothing changed.`);
  if (deps.now().getTime() - Date.parse(op.createdAt) > deps.planTtlMs) {
    return say(`This plan is older than ${Math.round(deps.planTtlMs / 60_000)} minutes and may no longer match the cluster. Run the command again for a fresh plan. Nothing changed.`);
  }
  if (op.rehearsal !== undefined && op.rehearsal.stagingOp === undefined && op.override === undefined) {
    const what = op.kind === 'terraform-apply' ? `no apply of commit ${op.terraform?.commit?.slice(0, 12) ?? '?'} in staging with its gate passed` : `no staging rehearsal of ${op.target.version ?? 'its target'}`;
    return say(`\`${op.id}\` has ${what} in the records; an approver must click Override first. Nothing changed.`);
  }
  const windowRefusal = outsideWindowRefusal(cluster, deps.now());
  if (windowRefusal !== undefined) return say(`${windowRefusal} Nothing changed.`);
  const lock = await deps.lock.acquire(cluster.name, op.id);
  if (!lock.ok) return say(`*${cluster.name}* is held by ${await operationRefById(deps, lock.heldBy)}; one mutating operation at a time. Nothing changed.`);
  const startedAt = deps.now().toISOString();
  // The start and its entry are one write; the edited root says it started, the entry goes to the thread with the first step's reply.
  const { op: running, changed } = await deps.audit.transition(
    op.id,
    { actor: user, event: startedByApprovers(op.kind) ? 'applied' : 'started', ...(reviewItems(op.kind).length > 0 ? { detail: `review confirmed: ${reviewItems(op.kind).join('; ')}` } : {}) },
    (o) => (o.state === 'planned' && o.planNonce === click.nonce ? { ...o, state: 'running', startedBy: user, startedAt, planNonce: undefined, confirmedReview: reviewItems(o.kind) } : undefined),
    { hold: true },
  );
  if (!changed) {
    // A second click on the same Start re-acquires the lock under the same id: the lock then belongs to the started operation.
    if (running.startedAt === undefined) await deps.lock.release(cluster.name, op.id);
    return say(`\`${op.id}\` was already started or cancelled by someone else. Nothing changed.`);
  }
  // Queued before the root is edited: a Slack outage must not leave a started operation without its run.
  await enqueueRun(deps.opsQueue, op.id, 'start');
  if (running.rootTs !== undefined) await deps.chat.update(running.channel, running.rootTs, operationRootMessage(running));
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
  if (decision === 'approved') {
    const refusal = fourEyesRefusal(cluster, op, user, 'approve this step') ?? windowRefusalFor(deps, op, approval.step);
    if (refusal !== undefined) return say(refusal);
  }
  const now = deps.now();
  const node = op.steps.find((s) => s.id === approval.step)?.node ?? approval.step;
  // The decision and its entry are one write: a bot that dies right after the click cannot lose the entry.
  const entry = { actor: user, event: decision === 'approved' ? `approved ${node}` : `stopped at ${node}` };
  const { op: after, changed } = await deps.audit.transition(op.id, entry, (o) => {
    const current = o.approvals.find((a) => a.nonce === click.nonce);
    if (!current || current.state !== 'pending' || o.state !== 'awaiting-approval') return undefined;
    if (Date.parse(current.expiresAt) <= now.getTime()) return undefined;
    const approvals = o.approvals.map((a) => (a.nonce === click.nonce ? { ...a, state: decision, by: user, at: now.toISOString() } : a));
    if (decision === 'approved') return { ...o, state: 'running', approvals };
    return { ...o, approvals, state: 'cancelled', endedAt: now.toISOString(), cancelRequestedBy: user, reason: `stopped by <@${user}> at the approval of ${approval.step.replace('node-', '')}` };
  }, { hold: decision === 'approved' });
  if (!changed) {
    const current = after.approvals.find((a) => a.nonce === click.nonce)!;
    if (current.state === 'pending' && Date.parse(current.expiresAt) <= now.getTime()) return say('This approval request has expired. The operation pauses; ask for approval again from the expired message. Nothing changed.');
    const who = current.by ? ` by <@${current.by}>` : '';
    return say(`This step was already ${current.state}${who}; \`${op.id}\` is ${after.state}. Nothing changed.`);
  }
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
  await showDecision(deps.chat, recorded, decided, click.messageTs);
  // The run repaints the root when it starts the step; a stop ends the operation here.
  if (decision === 'stopped' && recorded.rootTs !== undefined) await deps.chat.update(after.channel, recorded.rootTs, operationRootMessage(recorded));
}

/**
 * The Rollback button of a stopped upgrade requests the same rollback as `/talos rollback`: its
 * preflight looks at what the node runs now and at etcd quorum, takes over the upgrade's lock,
 * and an approver decides. The click itself touches nothing.
 */
async function rollback(deps: ActionDeps, click: Click): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  if (!(await deps.authorizer.isMember(user, cluster.operators))) return say(`Only operators of *${cluster.name}* may request a rollback; an approver then approves it. Nothing changed.`);
  const child = newOperationId();
  const entry = { actor: user, event: `rollback of ${op.failure?.node ?? 'the node'} requested`, detail: `operation ${child}: preflight, then an approver's click` };
  const { op: after, changed } = await deps.audit.transition(op.id, entry, (o) =>
    o.failure && o.failure.nonce === click.nonce && o.failure.rollback === 'offered' && o.state === 'failed' ? { ...o, failure: { ...o.failure, rollback: 'requested', rollbackOp: child } } : undefined,
  );
  if (!changed || after.failure === undefined) {
    const existing = after.failure?.rollbackOp ? ` as ${await operationRefById(deps, after.failure.rollbackOp)}` : '';
    return say(`A rollback of this node was already requested${existing}, or \`${op.id}\` is ${after.state}. Nothing changed.`);
  }
  const { node, step } = after.failure;
  await deps.store.create(
    newOperation({ id: child, kind: 'node-rollback', cluster: op.cluster, channel: op.channel, requestedBy: user, createdAt: deps.now().toISOString(), state: 'preflight', target: { node }, parent: { op: op.id, step } }),
  );
  await enqueuePreflight(deps.opsQueue, child);
  // Its plan does not exist yet: the answer says where it appears, and the plan is its message (as a command's reply does).
  await say(`Requested the rollback of ${node} as \`${child}\`: its preflight checks what the node runs and etcd quorum, and its plan appears in this channel as a message of its own; then an approver decides. Nothing is touched before that.`);
}

async function rerequest(deps: ActionDeps, click: Click): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  if (!(await deps.authorizer.isMember(user, cluster.approvers))) return say(`Only approvers of *${cluster.name}* may ask for approval again. Nothing changed.`);
  const { changed, op: after } = await deps.audit.transition(op.id, { actor: user, event: 'approval requested again' }, (o) => {
    const latest = o.approvals.at(-1);
    return o.state === 'paused' && latest?.nonce === click.nonce && latest.state === 'expired' ? { ...o, state: 'running' } : undefined;
  });
  if (!changed) return say(`\`${op.id}\` is ${after.state}; this button is no longer valid. Nothing changed.`);
  await enqueueRun(deps.opsQueue, op.id, `resume-${click.nonce}`);
}

/**
 * Retry of a failed step that is safe to run again: operators and approvers; the cluster's lock was never released.
 * A retried approval-gated step asks for a fresh approval, and the window is checked again.
 */
async function retry(deps: ActionDeps, click: Click): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  if (!(await deps.authorizer.isMember(user, [...cluster.operators, ...cluster.approvers]))) return say(`Only operators and approvers of *${cluster.name}* may retry \`${op.id}\`. Nothing changed.`);
  const windowRefusal = op.retry === undefined ? undefined : windowRefusalFor(deps, op, op.retry.step);
  if (windowRefusal !== undefined) return say(windowRefusal);
  const at = deps.now().toISOString();
  const entry = { actor: user, event: `retry requested from ${op.retry?.step ?? 'the failed step'}`, detail: 'approvals given before the failure are spent' };
  const { op: after, changed } = await deps.audit.transition(op.id, entry, (o) => retried(o, click.nonce));
  if (!changed) return say(`\`${op.id}\` is ${after.state}; this Retry button is no longer valid. Nothing changed.`);
  await enqueueRun(deps.opsQueue, op.id, `retry-${click.nonce}`);
  if (click.messageTs !== undefined) await deps.chat.update(after.channel, click.messageTs, retriedMessage(after, user, at));
  if (after.rootTs !== undefined) await deps.chat.update(after.channel, after.rootTs, operationRootMessage(after));
}

/** Production's window, checked at every approval and retry, as the engine checks it before every step. */
function windowRefusalFor(deps: ActionDeps, op: Operation, stepId: string): string | undefined {
  if (!heldByWindows(op.kind) || op.steps.find((s) => s.id === stepId)?.windowOverride !== undefined) return undefined;
  const refusal = outsideWindowRefusal(clusterOf(deps, op), deps.now());
  return refusal === undefined ? undefined : `${refusal} Click again once the window is open. Nothing changed.`;
}

/** An approver's explicit word to start the waiting step outside the window; four eyes apply, and the record says who. */
async function overrideWindow(deps: ActionDeps, click: Click): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  if (!(await deps.authorizer.isMember(user, cluster.approvers))) return say(`Only approvers of *${cluster.name}* may start a step outside the maintenance window. Nothing changed.`);
  const fourEyes = fourEyesRefusal(cluster, op, user, 'start it outside the window');
  if (fourEyes !== undefined) return say(fourEyes);
  const at = deps.now().toISOString();
  const waitingFor = op.steps.find((s) => s.id === op.windowWait?.step);
  const entry = { actor: user, event: 'maintenance window overridden', detail: waitingFor?.node ?? waitingFor?.id };
  const { op: after, changed } = await deps.audit.transition(op.id, entry, (o) => {
    const wait = o.windowWait;
    if (o.state !== 'waiting-window' || wait?.nonce !== click.nonce) return undefined;
    return { ...o, state: 'running', windowWait: undefined, steps: o.steps.map((s) => (s.id === wait.step ? { ...s, windowOverride: { by: user, at } } : s)) };
  });
  if (!changed) return say(`\`${op.id}\` is ${after.state}; this button is no longer valid. Nothing changed.`);
  await enqueueRun(deps.opsQueue, op.id, `window-override-${click.nonce}`);
  if (click.messageTs !== undefined) await deps.chat.update(after.channel, click.messageTs, { text: `▶️ Started outside the maintenance window by <@${user}> (${op.id}).` });
}

/** A refused, stopped or expired Terraform change planned again, by an operator: a new operation with its own review. */
async function planAgain(deps: ActionDeps, click: Click): Promise<void> {
  const { op, user, say } = click;
  const cluster = clusterOf(deps, op);
  if (op.kind !== 'terraform-apply' || click.nonce !== PLAN_AGAIN_NONCE) return say('That button does not plan anything. Nothing changed.');
  if (!(await deps.authorizer.isMember(user, cluster.operators))) return say(`Only operators of *${cluster.name}* may ask for a Terraform plan. Nothing changed.`);
  const child = newOperationId();
  const { op: after, changed } = await deps.audit.transition(op.id, { actor: user, event: 'planned again', detail: `operation ${child}` }, (o) =>
    ['refused', 'failed', 'cancelled'].includes(o.state) && o.replannedAs === undefined ? { ...o, replannedAs: child } : undefined,
  );
  if (!changed) return say(after.replannedAs ? `\`${op.id}\` was already planned again as \`${after.replannedAs}\`. Nothing changed.` : `\`${op.id}\` is ${after.state}; plan again once it has ended. Nothing changed.`);
  await deps.store.create(newOperation({ id: child, kind: 'terraform-apply', cluster: op.cluster, channel: op.channel, requestedBy: user, createdAt: deps.now().toISOString(), state: 'preflight' }));
  await enqueuePreflight(deps.opsQueue, child);
  await say(`Planning again as \`${child}\`: \`tofu plan\` runs, and the plan appears in this channel as a message of its own. Nothing is applied before an approver's Apply.`);
  if (after.rootTs !== undefined) await deps.chat.update(after.channel, after.rootTs, operationRootMessage(after));
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
    [ACTION.windowOverride, (c) => overrideWindow(deps, c)],
    [ACTION.planAgain, (c) => planAgain(deps, c)],
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
