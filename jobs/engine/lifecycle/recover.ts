import { operationRootMessage } from '../../../src/chat/operation-root.ts';
import { retriedMessage } from '../../../src/chat/stop-messages.ts';
import { newOperation, newOperationId, type Operation } from '../../../src/ops/operation.ts';
import { ENDED_UNDONE } from '../../../src/ops/state-machine.ts';
import { operationRefById } from '../../../src/chat/operation-link.ts';
import { retried } from '../../../src/ops/transitions.ts';
import { enqueuePreflight, enqueueRun } from '../../../src/queue/operation-jobs.ts';
import { fourEyesRefusal } from '../approvals/four-eyes.ts';
import { clusterOf, refused, type LifecyclePolicy, type MoveDeps, type MoveResult } from './deps.ts';
import type { OperationClick } from './start.ts';
import { windowRefusalFor } from './window.ts';

/**
 * Retry of a failed step that is safe to run again; the cluster's lock was never released. A
 * retried approval-gated step asks for a fresh approval, and the window is checked again.
 */
export async function retry(deps: MoveDeps, click: OperationClick): Promise<MoveResult> {
  const { op, user } = click;
  const windowRefusal = op.retry === undefined ? undefined : windowRefusalFor(deps, op, op.retry.step);
  if (windowRefusal !== undefined) return refused('window', windowRefusal);
  // An explicit retry (Talos fell back on its own) is an approver's decision: four eyes apply as to an approval.
  const fourEyes = op.retry?.explicit === undefined ? undefined : fourEyesRefusal(clusterOf(deps, op), op, user, 'retry this node');
  if (fourEyes !== undefined) return refused('four-eyes', fourEyes);
  const at = deps.now().toISOString();
  const entry = {
    actor: user,
    event: `${op.retry?.explicit ?? 'retry'} requested from ${op.retry?.step ?? 'the failed step'}`,
    detail: [op.retry?.does, 'approvals given before the failure are spent'].filter((d) => d !== undefined).join('; '),
  };
  const { op: after, changed } = await deps.audit.transition(op.id, entry, (o) => retried(o, click.nonce));
  if (!changed) return refused('stale', `\`${op.id}\` is ${after.state}; this Retry button is no longer valid. Nothing changed.`);
  await enqueueRun(deps.opsQueue, op.id, `retry-${click.nonce}`);
  if (click.messageTs !== undefined) await deps.chat.update(after.channel, click.messageTs, retriedMessage(after, user, at));
  if (after.rootTs !== undefined)
    await deps.chat.update(after.channel, after.rootTs, operationRootMessage(after, deps.policy.presentation(after.kind)));
  return { ok: true, op: after };
}

/**
 * An approver's explicit word to start the waiting step outside the window. The runbook keeps
 * production changes to a window, so leaving it takes two distinct approvers: the first click is
 * recorded and waits; a second approver's click starts the step. Four eyes apply to both, and the
 * record names both.
 */
export async function overrideWindow(deps: MoveDeps, click: OperationClick): Promise<MoveResult> {
  const { op, user } = click;
  const fourEyes = fourEyesRefusal(clusterOf(deps, op), op, user, 'start it outside the window');
  if (fourEyes !== undefined) return refused('four-eyes', fourEyes);
  const first = op.windowWait?.nonce === click.nonce ? op.windowWait.firstOverride : undefined;
  if (first?.by === user)
    return refused(
      'second-approver',
      `You already asked to start \`${op.id}\` outside the maintenance window; a second approver must click too. Nothing changed.`,
    );
  const at = deps.now().toISOString();
  const waitingFor = op.steps.find((s) => s.id === op.windowWait?.step);
  const what = waitingFor?.node ?? waitingFor?.id ?? 'the waiting step';
  if (first === undefined) {
    const asking = { actor: user, event: 'start outside the maintenance window asked; a second approver must confirm', detail: what };
    const { op: asked, changed } = await deps.audit.transition(op.id, asking, (o) =>
      o.state === 'waiting-window' && o.windowWait?.nonce === click.nonce && o.windowWait.firstOverride === undefined
        ? { ...o, windowWait: { ...o.windowWait, firstOverride: { by: user, at } } }
        : undefined,
    );
    if (!changed)
      return refused(
        'stale',
        `\`${op.id}\` is ${asked.state}; this button is no longer valid, or another approver clicked at the same moment. Nothing changed.`,
      );
    return {
      ok: true,
      op: asked,
      reply: `Recorded: you ask to start \`${op.id}\` outside the maintenance window. It starts once a second approver clicks "Start outside the window" too; until then it waits for the window.`,
    };
  }
  const entry = {
    actor: user,
    event: 'maintenance window overridden',
    detail: `${what}; asked by <@${first.by}>, confirmed by <@${user}>`,
  };
  const { op: after, changed } = await deps.audit.transition(op.id, entry, (o) => {
    const wait = o.windowWait;
    if (o.state !== 'waiting-window' || wait?.nonce !== click.nonce || wait.firstOverride?.by !== first.by) return undefined;
    const windowOverride = { by: first.by, at: first.at, secondBy: user, secondAt: at };
    return {
      ...o,
      state: 'running',
      windowWait: undefined,
      steps: o.steps.map((s) => (s.id === wait.step ? { ...s, windowOverride } : s)),
    };
  });
  if (!changed) return refused('stale', `\`${op.id}\` is ${after.state}; this button is no longer valid. Nothing changed.`);
  await enqueueRun(deps.opsQueue, op.id, `window-override-${click.nonce}`);
  if (click.messageTs !== undefined)
    await deps.chat.update(after.channel, click.messageTs, {
      text: `▶️ Started outside the maintenance window by <@${first.by}> and <@${user}> (${op.id}).`,
    });
  return { ok: true, op: after };
}

/**
 * The Rollback button of a stopped upgrade requests the same rollback as `/talos rollback`: its
 * preflight looks at what the node runs now and at etcd quorum, takes over the upgrade's lock,
 * and an approver decides. The click itself touches nothing.
 */
export async function requestRollback(deps: MoveDeps, click: OperationClick): Promise<MoveResult> {
  const { op, user } = click;
  // The kind that rolls the node back is the failed playbook's to name; one that names none offers no Rollback.
  const rollbackKind = deps.policy.rollbackKind(op.kind);
  if (rollbackKind === undefined) return refused('stale', `\`${op.id}\` offers no rollback. Nothing changed.`);
  const child = newOperationId();
  const entry = {
    actor: user,
    event: `rollback of ${op.failure?.node ?? 'the node'} requested`,
    detail: `operation ${child}: preflight, then an approver's click`,
  };
  const { op: after, changed } = await deps.audit.transition(op.id, entry, (o) =>
    o.failure && o.failure.nonce === click.nonce && o.failure.rollback === 'offered' && o.state === 'failed'
      ? { ...o, failure: { ...o.failure, rollback: 'requested', rollbackOp: child } }
      : undefined,
  );
  if (!changed || after.failure === undefined) {
    const existing = after.failure?.rollbackOp ? ` as ${await operationRefById(deps, after.failure.rollbackOp)}` : '';
    return refused(
      'already',
      `A rollback of this node was already requested${existing}, or \`${op.id}\` is ${after.state}. Nothing changed.`,
    );
  }
  const { node, step } = after.failure;
  await deps.store.create(
    newOperation({
      id: child,
      kind: rollbackKind,
      cluster: op.cluster,
      channel: op.channel,
      requestedBy: user,
      createdAt: deps.now().toISOString(),
      state: 'preflight',
      target: { node },
      data: { parent: { op: op.id, step } },
    }),
  );
  await enqueuePreflight(deps.opsQueue, child);
  // Its plan does not exist yet: the answer says where it appears, and the plan is its message (as a command's reply does).
  const reply = `Requested the rollback of ${node} as \`${child}\`: its preflight checks what the node runs and etcd quorum, and its plan appears in this channel as a message of its own; then an approver decides. Nothing is touched before that.`;
  return { ok: true, op: after, reply };
}

/** The operation a refused request (or a Terraform change) was requested again as (its `data.replannedAs`), if any. */
function replannedAs(op: Operation): string | undefined {
  const again = op.data?.['replannedAs'];
  return typeof again === 'string' ? again : undefined;
}

/**
 * The states an operation may be asked for again from: a Terraform change refused, stopped or expired gets a fresh plan;
 * any other operation only once refused, since a stopped one has its Retry and Rollback and never started twice.
 */
function againFrom(op: Operation, policy: LifecyclePolicy): readonly Operation['state'][] {
  return policy.again(op.kind) === 'replan' ? ENDED_UNDONE : ['refused'];
}

/**
 * The same request again, by an operator: a new operation of the same kind and target, whose preflight checks everything
 * afresh (a refusal is a decision point: what refused it may have been transient, or fixed since). Once per operation.
 */
export async function planAgain(deps: MoveDeps, click: OperationClick): Promise<MoveResult> {
  const { op, user } = click;
  const child = newOperationId();
  const replan = deps.policy.again(op.kind) === 'replan';
  const { op: after, changed } = await deps.audit.transition(
    op.id,
    { actor: user, event: replan ? 'planned again' : 'requested again', detail: `operation ${child}` },
    (o) =>
      againFrom(o, deps.policy).includes(o.state) && replannedAs(o) === undefined
        ? { ...o, data: { ...o.data, replannedAs: child } }
        : undefined,
  );
  if (!changed) {
    const again = replannedAs(after);
    if (again !== undefined)
      return refused('already', `\`${op.id}\` was already ${replan ? 'planned' : 'requested'} again as \`${again}\`. Nothing changed.`);
    return refused(
      'stale',
      replan
        ? `\`${op.id}\` is ${after.state}; plan again once it has ended. Nothing changed.`
        : `\`${op.id}\` is ${after.state}; it can be requested again once it was refused. Nothing changed.`,
    );
  }
  const parent = op.data?.['parent'];
  await deps.store.create(
    newOperation({
      id: child,
      kind: op.kind,
      cluster: op.cluster,
      channel: op.channel,
      requestedBy: user,
      createdAt: deps.now().toISOString(),
      state: 'preflight',
      // Only what the command asked for: everything the preflight derived is derived again.
      target: {
        ...(op.target.node === undefined ? {} : { node: op.target.node }),
        ...(op.target.version === undefined ? {} : { version: op.target.version }),
      },
      ...(parent === undefined ? {} : { data: { parent } }),
    }),
  );
  await enqueuePreflight(deps.opsQueue, child);
  const reply = replan
    ? `Planning again as \`${child}\`: \`tofu plan\` runs, and the plan appears in this channel as a message of its own. Nothing is applied before an approver's Apply.`
    : `Checking again as \`${child}\`: its preflight runs, and its plan or refusal appears in this channel as a message of its own. Nothing is touched before that.`;
  // The answer first: the old message gets its new look after the person learned where the new one appears.
  const followUp = async (): Promise<void> => {
    if (after.rootTs !== undefined)
      await deps.chat.update(after.channel, after.rootTs, operationRootMessage(after, deps.policy.presentation(after.kind)));
  };
  return { ok: true, op: after, reply, followUp };
}
