import type { Job } from 'bullmq';
import type { ChatMessage } from '../src/chat/chat-port.ts';
import { errorText } from '../src/chat/error-text.ts';
import { retryableFailureMessage } from '../src/chat/operation-messages.ts';
import { operationRootMessage, stepLabel } from '../src/chat/upgrade-messages.ts';
import type { ClusterSession } from '../src/cluster/cluster-session.ts';
import type { ClusterConfig } from '../src/config/inventory.ts';
import type { Logger } from '../src/log/logger.ts';
import { gitHead } from '../src/ops/git-head.ts';
import { maintenanceRecordMarkdown } from '../src/ops/maintenance-record.ts';
import { withStep, type Approval, type Operation, type Step } from '../src/ops/operation.ts';
import { OperationJobData } from '../src/queue/job-schemas.ts';
import type { Talosctl } from '../src/talos/talosctl.ts';
import { checkpoint, clusterNamed, StepFailure, type OpsJobDeps } from './job-context.ts';

export const newNonce = (): string => crypto.randomUUID().replace(/-/g, '').slice(0, 12);

export interface WalkContext {
  deps: OpsJobDeps;
  cluster: ClusterConfig;
  session: ClusterSession;
  talosctl: Talosctl;
  log: Logger;
  signal?: AbortSignal;
}

/** What a finished step leaves in the thread. */
export interface StepResult {
  event: string;
  detail: string;
  message?: ChatMessage;
}

/** How one kind of operation runs its steps; the walk around them (approvals, cancel, stop, finish) is shared. */
export interface Playbook {
  /** Whether a person approves `step` before it runs. */
  needsApproval(step: Step): boolean;
  approvalMessage(ctx: WalkContext, op: Operation, approval: Approval, step: Step): Promise<ChatMessage>;
  /** Runs one step; throws {@link StepFailure} to stop the operation. */
  runStep(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult>;
  /** After the last step: the validation for the record and the follow-up for the thread. */
  complete(ctx: WalkContext, op: Operation): Promise<{ validation: string; followUp: ChatMessage }>;
  /** The step a Retry re-runs from after `step` failed; undefined when running it again is not safe. */
  retryFrom(step: Step): string | undefined;
}

export async function patchStep(deps: OpsJobDeps, opId: string, stepId: string, patch: Partial<Step>): Promise<Operation> {
  const { op } = await deps.store.update(opId, (o) => withStep(o, stepId, patch));
  return op;
}

export async function refreshRoot(deps: OpsJobDeps, op: Operation): Promise<void> {
  if (op.rootTs !== undefined) await deps.chat.update(op.channel, op.rootTs, operationRootMessage(op));
}

/** A signal bounded by the probe timeout, for one read of the cluster. */
export function probeSignal(ctx: WalkContext): AbortSignal {
  const timeout = AbortSignal.timeout(ctx.deps.timeouts.probeMs);
  return ctx.signal ? AbortSignal.any([ctx.signal, timeout]) : timeout;
}

/** Stops at the first failure: the lock is kept, and a Retry offered when the playbook says the step may run again. */
async function stopAt(deps: OpsJobDeps, log: Logger, playbook: Playbook, opId: string, stepId: string, failure: StepFailure): Promise<void> {
  const now = deps.now().toISOString();
  const { op } = await deps.store.update(opId, (o) => {
    const step = o.steps.find((s) => s.id === stepId);
    const from = step ? playbook.retryFrom(step) : undefined;
    return {
      ...withStep(o, stepId, { status: 'failed', endedAt: now, detail: failure.message }),
      state: 'failed',
      reason: failure.message,
      endedAt: now,
      retry: from === undefined ? undefined : { step: from, nonce: newNonce(), state: 'offered' },
    };
  });
  log.warn({ step: stepId, reason: failure.message }, 'operation stopped at the first failure');
  await refreshRoot(deps, op);
  const step = op.steps.find((s) => s.id === stepId);
  await deps.audit.record(opId, { actor: 'bot', event: 'stopped', detail: failure.message }, retryableFailureMessage(op, step, failure.message, failure.evidence));
}

async function requestApproval(ctx: WalkContext, playbook: Playbook, op: Operation, step: Step): Promise<void> {
  const { deps } = ctx;
  const requestedAt = deps.now();
  const approval: Approval = {
    step: step.id,
    nonce: newNonce(),
    messageTs: '',
    requestedAt: requestedAt.toISOString(),
    expiresAt: new Date(requestedAt.getTime() + deps.timeouts.approvalTtlMs).toISOString(),
    state: 'pending',
  };
  const message = await playbook.approvalMessage(ctx, op, approval, step);
  await deps.store.update(op.id, (o) => ({ ...o, state: 'awaiting-approval', approvals: [...o.approvals, approval] }));
  const { ts } = await deps.chat.reply(op.channel, op.rootTs!, message);
  const { op: posted } = await deps.store.update(op.id, (o) => ({ ...o, approvals: o.approvals.map((a) => (a.nonce === approval.nonce ? { ...a, messageTs: ts } : a)) }));
  await deps.opsQueue.add('approval-expiry', { opId: op.id, nonce: approval.nonce }, { jobId: `${op.id}-expire-${approval.nonce}`, delay: deps.timeouts.approvalTtlMs, removeOnComplete: true });
  await refreshRoot(deps, posted);
  ctx.log.info({ step: step.id }, 'approval requested');
}

/** Every step done: record the validation, release the cluster, post the follow-up and the maintenance record. */
async function complete(ctx: WalkContext, op: Operation, outcome: { validation: string; followUp: ChatMessage }): Promise<void> {
  const { deps, cluster } = ctx;
  const { validation, followUp } = outcome;
  const commit = await gitHead(cluster.terraformDir);
  const { op: done } = await deps.store.update(op.id, (o) => ({ ...o, state: 'completed', endedAt: deps.now().toISOString(), commit, validation }));
  await deps.lock.release(cluster.name, op.id);
  await refreshRoot(deps, done);
  await deps.audit.record(op.id, { actor: 'bot', event: 'completed', detail: validation }, followUp);
  const record = (await deps.store.get(op.id))!;
  await deps.chat.upload(done.channel, done.rootTs!, { filename: `${op.id}-maintenance-record.md`, title: `Maintenance record ${op.id}`, content: maintenanceRecordMarkdown(record) });
}

/** Where an approval-gated step stands: go on, or end this run (a request was posted or is still open). */
async function approvalGate(ctx: WalkContext, playbook: Playbook, op: Operation, step: Step): Promise<'go' | 'wait'> {
  const approval = op.approvals.filter((a) => a.step === step.id).at(-1);
  if (approval?.state === 'approved') return 'go';
  if (approval === undefined || approval.state === 'expired') {
    // An expired request is asked again only after a person moved the operation back to running.
    if (approval?.state === 'expired' && op.state !== 'running') return 'wait';
    await requestApproval(ctx, playbook, op, step);
    return 'wait';
  }
  if (approval.state === 'pending' && approval.messageTs === '') {
    // A crash between recording and posting the request: drop the unposted one, ask again.
    const { op: cleaned } = await ctx.deps.store.update(op.id, (o) => ({ ...o, approvals: o.approvals.filter((a) => a.nonce !== approval.nonce) }));
    await requestApproval(ctx, playbook, cleaned, step);
  }
  return 'wait';
}

/**
 * Walks an operation's stored steps from the first unfinished one. A run ends when a step
 * needs a person (the button enqueues the next run), at the first failure, or when done.
 */
export async function walkOperation(ctx: WalkContext, opId: string, playbook: Playbook): Promise<void> {
  const { deps } = ctx;
  for (;;) {
    const op = await deps.store.get(opId);
    if (!op || !['running', 'awaiting-approval'].includes(op.state)) return;
    if (op.cancelRequestedBy !== undefined) {
      const { op: cancelled } = await deps.store.update(opId, (o) => ({ ...o, state: 'cancelled', endedAt: deps.now().toISOString(), reason: `cancelled by <@${o.cancelRequestedBy}> between steps` }));
      await deps.lock.release(ctx.cluster.name, opId);
      await refreshRoot(deps, cancelled);
      await deps.audit.record(opId, { actor: op.cancelRequestedBy, event: 'cancelled between steps' });
      return;
    }
    const step = op.steps.find((s) => s.status === 'pending' || s.status === 'running');
    if (!step) {
      let outcome;
      try {
        outcome = await playbook.complete(ctx, op);
      } catch (error) {
        await stopAt(deps, ctx.log, playbook, opId, op.steps.at(-1)?.id ?? '', asFailure(error, ctx.log));
        return;
      }
      await complete(ctx, op, outcome);
      return;
    }
    checkpoint(deps);
    if (playbook.needsApproval(step) && (await approvalGate(ctx, playbook, op, step)) === 'wait') return;

    const startedAt = step.startedAt ?? deps.now().toISOString();
    let current = await patchStep(deps, opId, step.id, { status: 'running', startedAt });
    if (current.state !== 'running') current = (await deps.store.update(opId, (o) => ({ ...o, state: 'running' }))).op;
    await refreshRoot(deps, current);
    if (step.startedAt === undefined) await deps.audit.record(opId, { actor: 'bot', event: `step started: ${stepLabel(step)}` });
    try {
      const result = await playbook.runStep(ctx, current, current.steps.find((s) => s.id === step.id)!);
      const done = await patchStep(deps, opId, step.id, { status: 'done', endedAt: deps.now().toISOString(), detail: result.detail });
      await refreshRoot(deps, done);
      await deps.audit.record(opId, { actor: 'bot', event: result.event, detail: result.detail }, result.message);
    } catch (error) {
      if (!(error instanceof StepFailure) && ctx.signal?.aborted) throw error;
      await stopAt(deps, ctx.log, playbook, opId, step.id, asFailure(error, ctx.log));
      return;
    }
  }
}

/** Anything that is not a StepFailure (a parse error, an unexpected answer) also stops: never guess about a cluster. */
function asFailure(error: unknown, log: Logger): StepFailure {
  if (error instanceof StepFailure) return error;
  log.error({ err: errorText(error) }, 'step failed unexpectedly');
  return new StepFailure(errorText(error));
}

/**
 * The run job of a playbook: opens a session with the talosctl matching the Talos the
 * operation planned against, and walks. A session that cannot open (credentials, binary)
 * stops the operation at its next step with the reason, rather than leaving it running.
 */
export function createWalkJob(deps: OpsJobDeps, playbook: Playbook) {
  return async (job: Job, jobSignal?: AbortSignal): Promise<void> => {
    const { opId } = OperationJobData.parse(job.data);
    // A second run of the operation (a job run again after its lock lapsed, the next click) waits here, then walks from the stored state.
    await deps.runLease.hold(opId, async (signal) => {
      const op = await deps.store.get(opId);
      if (!op || !['running', 'awaiting-approval'].includes(op.state)) return;
      const cluster = clusterNamed(deps.inventory, op.cluster);
      const log = deps.logger.child({ op: opId, cluster: cluster.name });
      log.info({ job: job.id }, 'operation run started');
      try {
        await deps.access.withSession(cluster, signal, async (session) => {
          const talosctl = await session.talosctl(op.target.talosVersion);
          await walkOperation({ deps, cluster, session, talosctl, log, signal }, opId, playbook);
        });
      } catch (error) {
        if (signal.aborted) throw error;
        const latest = await deps.store.get(opId);
        const step = latest?.steps.find((s) => s.status === 'pending' || s.status === 'running');
        if (!latest || !step || latest.state !== 'running') throw error;
        await stopAt(deps, log, playbook, opId, step.id, new StepFailure(`the bot could not reach ${cluster.name}: ${errorText(error)}`));
      }
    }, jobSignal);
  };
}
