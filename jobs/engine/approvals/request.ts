import { errorText } from '../../../src/errors.ts';
import { shownEvidence, withApprovers, withScope, withTakeButton, type ApprovalRequest } from '../../../src/chat/approval-messages.ts';
import type { Approval, Operation, Step } from '../../../src/ops/operation.ts';
import { enqueueApprovalExpiry, enqueueApprovalReminder, newNonce } from '../../../src/queue/jobs.ts';
import { isPosted, type Playbook, type PostedOperation, type EngineContext } from '../playbook.ts';
import { refreshRoot } from '../root-message.ts';
import { approversToPage } from './four-eyes.ts';

/** Whether the cluster lets one approval cover every later approval-gated step of an operation. */
function operationScoped(ctx: EngineContext): boolean {
  return ctx.cluster.approvalScope === 'operation';
}

/**
 * Whether an operation-wide approval may cover `step`, or give one that covers others: never a step that needs
 * several approvers, nor one the playbook says a person must see for itself (a saved plan's `tofu apply`).
 */
export function coverable(playbook: Playbook, step: Step): boolean {
  return (playbook.approvalsNeeded?.(step) ?? 1) <= 1 && playbook.neverCovered?.(step) !== true;
}

/**
 * Asks for a person's approval before a gated step, with what the playbook shows of the
 * cluster now. The thread reads in order: the entries held since the last reply (the previous
 * step's result) and the long evidence (the full etcd table) go out first, in their own reply;
 * then the request, one reply of its own whose buttons are edited once decided. That reply is
 * broadcast: the channel shows the question, and Slack notifies the approvers it mentions once.
 * Under `approvalScope: operation` the card says that it covers every step left that asks one.
 */
async function requestApproval(ctx: EngineContext, playbook: Playbook, op: PostedOperation, step: Step): Promise<void> {
  const { deps } = ctx;
  const requestedAt = deps.now();
  const needed = playbook.approvalsNeeded?.(step) ?? 1;
  // A step that needs several approvers, or whose approver must see what it does, is asked alone: it neither covers nor is covered.
  const scoped = operationScoped(ctx) && coverable(playbook, step);
  const approval: Approval = {
    step: step.id,
    nonce: newNonce(),
    messageTs: '',
    requestedAt: requestedAt.toISOString(),
    expiresAt: new Date(requestedAt.getTime() + deps.timeouts.approvalTtlMs).toISOString(),
    state: 'pending',
    ...(scoped ? { scope: 'operation' as const } : {}),
    ...(needed > 1 ? { needed } : {}),
  };
  const built = await playbook.approvalMessage(ctx, op, approval, step);
  const { evidence, ...card } = built;
  const gated = op.steps.filter((s) => s.status === 'pending' && playbook.needsApproval(s) && coverable(playbook, s)).length;
  const presentation = deps.presentations(op.kind);
  const request =
    scoped && gated > 1
      ? withScope(
          card,
          presentation.approval?.covers?.(gated) ?? `the ${gated} steps left that ask one`,
          Math.round(approvalMaxAgeMs(deps.timeouts) / 60_000),
        )
      : card;
  await postBefore(ctx, op.id, evidence);
  // Kept with the approval: the request, once decided, still shows what the approver saw.
  const shown = shownEvidence(request);
  // The approver whose Apply started the operation is paged again: four eyes bar only its requester then.
  const barred = playbook.startedBy === 'approvers' ? { ...op, startedBy: undefined } : op;
  // Several approvers: four eyes hold whatever the cluster says, so the requester and the starter are not paged.
  const pageCluster = needed > 1 ? { ...ctx.cluster, requireDistinctApprover: true } : ctx.cluster;
  // An approver who took the operation's approvals is its only page; a request that needs several approvers pages them all.
  const taken = needed > 1 ? undefined : op.approvalsTaken?.by;
  const paged = taken === undefined ? approversToPage(pageCluster, barred) : [taken];
  // [Take it] where more requests of this operation follow, which taking would page: never under an operation-wide approval.
  const later = needed > 1 || scoped ? 0 : gated - 1;
  const message = { ...withApprovers(withTakeButton(request, op, approval, later), paged, taken !== undefined), broadcast: true };
  const asked = await deps.audit.record(op.id, { actor: 'bot', event: `approval requested: ${step.node ?? step.id}` }, message, (o) =>
    o.state === 'running'
      ? { ...o, state: 'awaiting-approval', approvals: [...o.approvals, { ...approval, shown, seq: o.audit.length + 1 }] }
      : undefined,
  );
  if (asked.approvals.some((a) => a.nonce === approval.nonce)) await publishApproval(ctx, op.id, approval.nonce);
}

/**
 * What goes to the thread before a request: the long evidence as an entry of its own (it carries
 * the held entries before it), or, without any, the held entries alone. So the request's reply
 * holds the request only, and nothing sits below its buttons.
 */
async function postBefore(ctx: EngineContext, opId: string, evidence: ApprovalRequest['evidence']): Promise<void> {
  const { deps } = ctx;
  if (evidence !== undefined) {
    // The table goes in a file, the thread gets the line that names it; best effort: a failed upload costs the file, not the request.
    const op = await deps.store.get(opId);
    if (op?.rootTs !== undefined)
      await deps.chat
        .upload(op.channel, op.rootTs, evidence.file)
        .catch((error: unknown) => ctx.log.warn({ err: errorText(error) }, 'etcd evidence not attached'));
    await deps.audit.record(opId, { actor: 'bot', event: evidence.event }, evidence.message);
    return;
  }
  const { changed } = await deps.store.update(opId, (o) =>
    o.audit.some((e) => e.hold === true && e.ts === undefined)
      ? { ...o, audit: o.audit.map((e) => (e.hold === true && e.ts === undefined ? { ...e, hold: false } : e)) }
      : undefined,
  );
  if (changed) await deps.audit.flush(opId);
}

/** The approval a person gave for `approval`: itself, or the operation-wide approval that covered its step. */
function decisionOf(op: Operation, approval: Approval): Approval | undefined {
  return approval.coveredBy === undefined ? approval : op.approvals.find((a) => a.nonce === approval.coveredBy);
}

/**
 * Under `approvalScope: operation`, what would cover the next step: the operation's latest approval, given under
 * that scope and not spent (by a failure, a Retry, a closed window), and the person's decision behind it (a cover
 * points to the decision, never to another cover, so covering never makes a decision younger). None when the
 * cluster asks per node, or once someone asked the operation to stop and it goes on only to finish a step.
 */
function coveringApproval(ctx: EngineContext, op: Operation): { latest: Approval; decision: Approval } | undefined {
  if (!operationScoped(ctx) || op.cancelRequestedBy !== undefined) return undefined;
  const latest = op.approvals.at(-1);
  if (latest?.state !== 'approved' || latest.scope !== 'operation') return undefined;
  const decision = decisionOf(op, latest);
  return decision?.state === 'approved' && decision.scope === 'operation' && decision.coveredBy === undefined
    ? { latest, decision }
    : undefined;
}

/**
 * Records that an operation-wide approval covers `step`, as an approval of its own (so a failure or a Retry
 * of this step spends it like any other) that names the person's decision: its age is that decision's.
 * True when the step may go.
 */
async function coverStep(ctx: EngineContext, op: Operation, step: Step, cover: { latest: Approval; decision: Approval }): Promise<boolean> {
  const { deps } = ctx;
  const { latest, decision } = cover;
  const now = deps.now().toISOString();
  const covered: Approval = {
    step: step.id,
    nonce: newNonce(),
    messageTs: '',
    requestedAt: now,
    expiresAt: now,
    state: 'approved',
    ...(decision.by === undefined ? {} : { by: decision.by }),
    at: now,
    scope: 'operation',
    coveredBy: decision.nonce,
  };
  const { op: after } = await deps.audit.transition(
    op.id,
    {
      actor: 'bot',
      event: `approved ${step.node ?? step.id}: covered by the approval of ${decision.by === undefined ? 'an approver' : `<@${decision.by}>`}`,
      detail: `approvalScope: operation; that approval was given at ${decision.at ?? decision.requestedAt} for ${decision.step}`,
    },
    (o) =>
      o.state === 'running' &&
      o.cancelRequestedBy === undefined &&
      o.approvals.at(-1)?.nonce === latest.nonce &&
      o.approvals.find((a) => a.nonce === decision.nonce)?.state === 'approved' &&
      !o.approvals.some((a) => a.step === step.id && a.state === 'approved')
        ? { ...o, approvals: [...o.approvals, covered] }
        : undefined,
    // The step's start tells the thread; the entry goes with it.
    { hold: true },
  );
  return after.state === 'running' && after.approvals.filter((a) => a.step === step.id).at(-1)?.state === 'approved';
}

/**
 * An operation-wide decision too old to cover `step`: an entry says so (it goes out with the request that
 * follows), and the operation is returned to ask in; undefined when it moved on meanwhile.
 */
async function coverTooOld(ctx: EngineContext, op: Operation, step: Step, cover: { latest: Approval; decision: Approval }) {
  const { deps } = ctx;
  const { decision } = cover;
  const minutes = Math.round(approvalMaxAgeMs(deps.timeouts) / 60_000);
  const by = decision.by === undefined ? '' : ` by <@${decision.by}>`;
  const event = `operation-wide approval too old for ${step.node ?? step.id}`;
  // A run that ended between the entry and the request it leads (a crash) asks without writing it twice.
  if (op.audit.at(-1)?.event === event) return isPosted(op) ? op : undefined;
  const { op: after, changed } = await deps.audit.transition(
    op.id,
    {
      actor: 'bot',
      event,
      detail: `given${by} at ${decision.at ?? decision.requestedAt} for ${decision.step}, more than ${minutes} min ago (APPROVAL_MAX_AGE_MINUTES); an approver is asked again`,
    },
    (o) => (o.state === 'running' && o.approvals.at(-1)?.nonce === cover.latest.nonce ? o : undefined),
    { hold: true },
  );
  return changed && isPosted(after) ? after : undefined;
}

/**
 * Waits on a click only once the request is in Slack: its message is the reply that carries its
 * entry. Until then the run ends with an error and is run again (the reconciler looks for these).
 */
async function publishApproval(ctx: EngineContext, opId: string, approvalNonce: string): Promise<void> {
  const { deps } = ctx;
  const requestOf = (o: Operation | undefined) => {
    const approval = o?.approvals.find((a) => a.nonce === approvalNonce);
    return { approval, ts: o?.audit.find((e) => e.seq === approval?.seq)?.ts };
  };
  const stored = await deps.store.get(opId);
  let { approval, ts } = requestOf(stored);
  if (ts === undefined) {
    await deps.audit.flush(opId);
    ({ approval, ts } = requestOf(await deps.store.get(opId)));
  }
  if (approval === undefined || ts === undefined) throw new Error('the approval request is not in Slack yet; the run is tried again');
  const posted = ts;
  const { op } = await deps.store.update(opId, (o) => ({
    ...o,
    approvals: o.approvals.map((a) => (a.nonce === approvalNonce ? { ...a, messageTs: posted } : a)),
  }));
  // The root says whom the operation waits for.
  await refreshRoot(deps, op);
  const now = deps.now().getTime();
  const expiresAt = Date.parse(approval.expiresAt);
  await enqueueApprovalExpiry(deps.opsQueue, opId, approvalNonce, Math.max(0, expiresAt - now));
  // A reminder only when it falls inside the request's life: one at the moment of asking would say nothing new.
  const remindAt = expiresAt - deps.timeouts.approvalReminderMs;
  if (deps.timeouts.approvalReminderMs > 0 && remindAt > Date.parse(approval.requestedAt)) {
    await enqueueApprovalReminder(deps.opsQueue, opId, approvalNonce, Math.max(0, remindAt - now));
  }
  ctx.log.info({ step: approval.step, node: op.steps.find((s) => s.id === approval.step)?.node }, 'approval requested');
}

/** The longest an approval may wait for its step to start (a window that closed, a long step before it), in ms. */
export function approvalMaxAgeMs(timeouts: { approvalTtlMs: number; approvalMaxAgeMs?: number }): number {
  return timeouts.approvalMaxAgeMs ?? timeouts.approvalTtlMs;
}

/**
 * Whether a person's decision was given longer ago than a step may start on it. A covered step's age is
 * that of the decision that covers it; a cover whose decision is gone is as old as can be.
 */
function tooOld(ctx: EngineContext, op: Operation, approval: Approval): boolean {
  const decision = decisionOf(op, approval);
  if (decision === undefined) return true;
  const given = Date.parse(decision.at ?? decision.requestedAt);
  return !(ctx.deps.now().getTime() - given <= approvalMaxAgeMs(ctx.deps.timeouts));
}

/**
 * Spends an approval its step did not start on in time, with an entry that says so, and returns the
 * operation to ask again in; undefined when the operation moved on meanwhile (another run, a cancel).
 */
async function spendStale(ctx: EngineContext, opId: string, approval: Approval): Promise<PostedOperation | undefined> {
  const { deps } = ctx;
  const minutes = Math.round(approvalMaxAgeMs(deps.timeouts) / 60_000);
  const by = approval.by === undefined ? '' : ` by <@${approval.by}>`;
  const { op: after, changed } = await deps.audit.transition(
    opId,
    {
      actor: 'bot',
      event: `approval too old: ${approval.step}`,
      detail: `given${by} at ${approval.at ?? approval.requestedAt}, more than ${minutes} min before its step could start; an approver is asked again`,
    },
    (o) =>
      o.state === 'running' && o.approvals.some((a) => a.nonce === approval.nonce && a.state === 'approved')
        ? { ...o, approvals: o.approvals.map((a): Approval => (a.nonce === approval.nonce ? { ...a, state: 'spent' } : a)) }
        : undefined,
    // The request that follows carries the entry to the thread.
    { hold: true },
  );
  return changed && isPosted(after) ? after : undefined;
}

/**
 * Where an approval-gated step stands: go on only on an approval given for this attempt of the
 * step (one spent by a failure or a Retry authorises nothing), or end this run because a
 * request was posted or is still open.
 */
export async function approvalGate(ctx: EngineContext, playbook: Playbook, op: PostedOperation, step: Step): Promise<'go' | 'wait'> {
  const approval = op.approvals.filter((a) => a.step === step.id).at(-1);
  if (approval?.state === 'approved') {
    // A step already under way goes on; one that has yet to start does so only on a recent decision.
    if (step.startedAt !== undefined || !tooOld(ctx, op, approval)) return 'go';
    const spent = await spendStale(ctx, op.id, approval);
    if (spent !== undefined) await requestApproval(ctx, playbook, spent, step);
    return 'wait';
  }
  // One approval for the whole operation: a step that was never asked goes on a recent one; a spent or expired one asks again.
  const cover = approval === undefined && coverable(playbook, step) ? coveringApproval(ctx, op) : undefined;
  if (cover !== undefined) {
    if (!tooOld(ctx, op, cover.decision)) return (await coverStep(ctx, op, step, cover)) ? 'go' : 'wait';
    const asking = await coverTooOld(ctx, op, step, cover);
    if (asking !== undefined) await requestApproval(ctx, playbook, asking, step);
    return 'wait';
  }
  if (approval === undefined || approval.state === 'expired' || approval.state === 'spent') {
    // An expired request is asked again only after an approver's word moved the operation back to running.
    if (approval?.state === 'expired' && op.state !== 'running') return 'wait';
    await requestApproval(ctx, playbook, op, step);
    return 'wait';
  }
  // A crash or a Slack outage between recording the request and posting it: post it now, the same request.
  if (approval.state === 'pending' && approval.messageTs === '') await publishApproval(ctx, op.id, approval.nonce);
  return 'wait';
}
