import type { Job } from 'bullmq';
import { UnknownKindError } from './unknown-kind.ts';
import { errorText } from '../../src/chat/error-text.ts';
import { toOperator } from '../../src/chat/follow-ups.ts';
import { failureMessage, windowWaitMessage } from '../../src/chat/stop-messages.ts';
import { allNodes, type ClusterConfig } from '../../src/config/inventory.ts';
import type { GateDeps, GateReport } from '../../src/health/health-gate.ts';
import { againstBaseline, type Baseline } from '../../src/health/baseline.ts';
import { runHealthGateSettingAside, type SetAside } from '../../src/health/gate-setting-aside.ts';
import type { Logger } from '../../src/log/logger.ts';
import { gitHead } from '../../src/tofu/git-head.ts';
import { terraformWorkDir } from '../../src/config/terraform-repo.ts';
import { withStep, type Operation, type Step } from '../../src/ops/operation.ts';
import { WALKING } from '../../src/ops/state-machine.ts';
import { cancelRefusal, spendApprovals } from '../../src/ops/transitions.ts';
import type { OperationJobData } from '../../src/queue/job-schemas.ts';
import { outsideWindowRefusal } from '../../src/chat/window-refusal.ts';
import { declaredWindows } from '../../src/config/maintenance-window.ts';
import { windowStatus } from '../../src/rules/maintenance-window.ts';
import { storedVersionProblems } from '../../src/rules/versions.ts';
import { supportTable } from '../../src/talos/compatibility.ts';
import { isUntrustedTalosctl } from '../../src/talos/talosctl-binary.ts';
import { checkpoint, operationCluster, DrainCheckpoint, probeSignals, StepFailure, type OpsJobDeps } from './job-context.ts';
import { approvalGate } from './approvals/request.ts';
import { observeStanding, unknownStanding } from './cluster-state.ts';
import type { ClusterStanding } from '../../src/chat/stop-state.ts';
import { refreshRoot } from './root-message.ts';
import { operationTitle } from '../../src/chat/operation-title.ts';
import { liveBoard, type LiveBoard } from './live-board.ts';
import { enqueueEnded, enqueueRun, newNonce } from '../../src/queue/operation-jobs.ts';
import { playbookContext, recordingContext } from './record.ts';
import { isPosted, type Playbook, type PostedOperation, type EngineContext, type WalkContext, type WalkStart } from './playbook.ts';
import { assertHoldsCluster, fencedContext } from './lock-fence.ts';

/** A version as the runbook writes it: talosctl and the Kubernetes API get nothing else. */
const VERSION = /^v?\d{1,4}\.\d{1,4}\.\d{1,4}$/;

export async function patchStep(deps: OpsJobDeps, opId: string, stepId: string, patch: Partial<Step>): Promise<Operation> {
  const { op } = await deps.store.update(opId, (o) => withStep(o, stepId, patch));
  return op;
}

/**
 * The health gate through the walk's talosctl and Kubernetes client, each probe bounded: on the
 * walk's cluster, or on `cluster` where the step judges another shape of it (nodes added or gone).
 */
export async function walkGate(
  ctx: WalkContext,
  cluster: ClusterConfig = ctx.cluster,
  options: Pick<GateDeps, 'drainNodes'> & {
    /** The operation's baseline and the nodes it just changed: only regressions fail (see `src/health/baseline.ts`). */
    baseline?: { baseline: Baseline | undefined; nodes: readonly string[] };
    /** A failed node the operation replaces, which the gate judges the cluster without (see `runHealthGateSettingAside`). */
    setAside?: SetAside;
  } = {},
): Promise<GateReport> {
  const { baseline, setAside, ...gateOptions } = options;
  const gateDeps = {
    talosctl: ctx.talosctl,
    kube: ctx.session.kube,
    probeTimeoutMs: ctx.deps.timeouts.probeMs,
    signal: ctx.signal,
    ...gateOptions,
  };
  const raw = await runHealthGateSettingAside(cluster, gateDeps, setAside);
  const report = baseline === undefined ? raw : againstBaseline(raw, baseline.baseline, baseline.nodes);
  // A gate of the cluster as it stands (with the nodes a step added or removed) is the cluster's newest gate; one that sets a
  // failed node aside judges a cluster that is not yet whole, and stays the step's own.
  if (setAside === undefined) ctx.gateDone?.(report);
  return report;
}

/** A signal bounded by the probe timeout, and by the run's signal, for one read of the cluster. */
export function probeSignal(ctx: Pick<WalkContext, 'deps' | 'signal'>): AbortSignal {
  return probeSignals(ctx.deps.timeouts.probeMs, ctx.signal)();
}

/**
 * Stops the operation at the first failure: no further step, the lock kept (a playbook that holds
 * none, such as a snapshot, leaves the cluster as free as it was), the step's approval
 * spent, a Retry offered when the step is safe to run again and a Rollback when it changed a node.
 * The stop and its entry are one write, and only while the operation still runs: a run that lost
 * its lease never writes over the run that holds it now.
 */
async function stopAt(
  deps: OpsJobDeps,
  log: Logger,
  playbook: Playbook,
  opId: string,
  stepId: string,
  failure: StepFailure,
  standing?: ClusterStanding,
): Promise<void> {
  const now = deps.now().toISOString();
  // A failure before the step began (its approval request could not read etcd, the session did not open) stops the
  // operation before that step: it stays pending, nothing of it ran, so a Retry of it is always safe.
  const before = (step: Step): boolean => step.status === 'pending' && step.startedAt === undefined;
  const op = await deps.audit.record(
    opId,
    { actor: 'bot', event: 'stopped', detail: failure.message },
    (o) => {
      const step = o.steps.find((s) => s.id === stepId);
      const holdsLock = playbook.lock === 'cluster';
      const extras = { continueWith: continueCommand(playbook, o) };
      if (step !== undefined && before(step))
        return failureMessage(
          o,
          undefined,
          `${failure.message} (before ${playbook.texts.stepLabel(step)}, which did not start)`,
          failure.evidence,
          playbook.texts,
          undefined,
          holdsLock,
          standing,
          extras,
        );
      return failureMessage(o, step, failure.message, failure.evidence, playbook.texts, failure.options.retry, holdsLock, standing, extras);
    },
    (o) => {
      const step = o.steps.find((s) => s.id === stepId);
      if (!WALKING.includes(o.state) || step === undefined || ['done', 'skipped', 'failed'].includes(step.status)) return undefined;
      const notStarted = before(step);
      const from = notStarted ? step.id : playbook.retryFrom(step, failure);
      const rollback =
        !notStarted &&
        step.node !== undefined &&
        step.issuedAt !== undefined &&
        failure.options.nodeUnchanged !== true &&
        failure.options.noRollback !== true &&
        playbook.offersRollback?.(step) === true;
      const stopped = notStarted ? o : withStep(o, stepId, { status: 'failed', endedAt: now, detail: failure.message });
      // Every approval from the failed step on is spent: an approval given ahead of its step (a Terraform change's Apply) authorises
      // only the attempt it was given for, so a Retry asks again.
      const later = o.steps.slice(o.steps.findIndex((s) => s.id === stepId)).map((s) => s.id);
      return {
        ...spendApprovals(stopped, later),
        state: 'failed',
        reason: failure.message,
        endedAt: now,
        retry: from === undefined ? undefined : retryOffer(step, from, failure),
        failure: rollback ? { step: stepId, node: step.node!, nonce: newNonce(), rollback: 'offered' } : undefined,
        stopNonce: newNonce(),
      };
    },
  );
  if (op.state !== 'failed' || op.endedAt !== now) return;
  log.warn(
    {
      step: stepId,
      node: op.steps.find((s) => s.id === stepId)?.node,
      reason: failure.message,
      unread: standing?.nodes.filter((n) => n.errors !== undefined).map((n) => ({ node: n.node, errors: n.errors })),
    },
    'operation stopped at the first failure',
  );
  await refreshRoot(deps, op);
  await enqueueEnded(deps.opsQueue, op);
}

/**
 * The command that asks for the same change again, named beside a stop's Cancel: `/talos upgrade
 * talos v1.12.11 production`. Its preflight starts from what the nodes run then (an upgrade skips the
 * nodes already on the target).
 */
function continueCommand(playbook: Playbook, op: Operation): string | undefined {
  const { words, argument } = playbook.command;
  const arg = argument.kind === 'version' ? op.target.version : argument.kind === 'node' ? (op.target.nodeName ?? op.target.node) : '';
  if (arg === undefined) return undefined;
  return ['/talos', ...words, arg, op.cluster].filter((w) => w !== '').join(' ');
}

/**
 * The Retry a stop offers: a step that reached its node is resumed by observation unless the
 * failure says the request is not in flight; what it does and who may give it, as the stop says.
 */
function retryOffer(step: Step, from: string, failure: StepFailure): NonNullable<Operation['retry']> {
  const same = from === step.id;
  const resume = same ? (failure.options.resume ?? (step.issuedAt !== undefined ? 'observe' : undefined)) : undefined;
  return {
    step: from,
    nonce: newNonce(),
    state: 'offered',
    resume,
    does: same ? failure.options.retry : undefined,
    explicit: same ? failure.options.explicitRetry : undefined,
  };
}

/** Anything that is not a StepFailure (a parse error, an unexpected answer) also stops: never guess about a cluster. */
function asFailure(error: unknown, log: Logger): StepFailure {
  if (error instanceof StepFailure) return error;
  log.error({ err: errorText(error) }, 'step failed unexpectedly');
  return new StepFailure(errorText(error));
}

/** Every step done: record the validation, release the cluster, post the follow-up and the maintenance record. */
async function complete(ctx: EngineContext, playbook: Playbook, op: PostedOperation): Promise<void> {
  const { deps, cluster } = ctx;
  const { validation, followUp } = await playbook.complete(playbookContext(ctx), op);
  const endedAt = deps.now().toISOString();
  const done = await deps.audit.record(op.id, { actor: 'bot', event: 'completed', detail: validation }, toOperator(op, followUp), (o) =>
    o.state === 'running' ? { ...o, state: 'completed', endedAt, validation } : undefined,
  );
  if (done.state !== 'completed' || done.endedAt !== endedAt) return;
  if (playbook.lock === 'cluster') await deps.lock.release(cluster.name, op.id);
  // The record is a job of its own: a failed upload must not turn a finished operation into a failure.
  await enqueueEnded(deps.opsQueue, done);
  await refreshRoot(deps, done);
}

/** A cancel asked for while a step ran takes effect here, between steps; the cluster is free once it is recorded. */
async function cancelBetweenSteps(ctx: EngineContext, playbook: Playbook, op: Operation, by: string): Promise<void> {
  const { deps } = ctx;
  const endedAt = deps.now().toISOString();
  const cancelled = await deps.audit.record(
    op.id,
    { actor: by, event: 'cancelled between steps', detail: 'no step is half done' },
    undefined,
    (o) => (WALKING.includes(o.state) ? { ...o, state: 'cancelled', endedAt, reason: `cancelled by <@${by}> between steps` } : undefined),
  );
  if (cancelled.state !== 'cancelled') return;
  if (playbook.lock === 'cluster') await deps.lock.release(ctx.cluster.name, op.id);
  await refreshRoot(deps, cancelled);
  await enqueueEnded(deps.opsQueue, cancelled);
}

/**
 * Production's window, checked before each step starts: a step that would start outside it
 * waits (the thread says so, with an approver's override), and a run is queued for when the
 * window opens. Returns false when the step may start now.
 */
async function waitsForWindow(ctx: EngineContext, playbook: Playbook, op: Operation, step: Step): Promise<boolean> {
  const { deps, cluster } = ctx;
  if (!playbook.heldByWindows || step.startedAt !== undefined || step.windowOverride !== undefined) return false;
  const now = deps.now();
  if (outsideWindowRefusal(cluster, now) === undefined) {
    if (op.state !== 'waiting-window') return false;
    await deps.audit.record(
      op.id,
      { actor: 'bot', event: 'maintenance window open', detail: playbook.texts.stepLabel(step) },
      undefined,
      (o) => (o.state === 'waiting-window' ? { ...o, state: 'running', windowWait: undefined } : undefined),
    );
    return false;
  }
  if (op.state === 'waiting-window' && op.windowWait?.step === step.id) return true;
  const status = windowStatus(declaredWindows(cluster.maintenanceWindows), now);
  const opensAt = status.inside ? undefined : status.nextStart?.toISOString();
  const nonce = newNonce();
  // An operation-wide approval was given for the window it saw: once that closes, the steps after it ask a person again.
  const covering = op.approvals.some((a) => a.state === 'approved' && a.scope === 'operation');
  const waiting = await deps.audit.record(
    op.id,
    {
      actor: 'bot',
      event: `waiting for the maintenance window: ${playbook.texts.stepLabel(step)}`,
      detail: [
        opensAt ? `opens ${opensAt}` : 'no window ahead',
        ...(covering ? ['the operation-wide approval is spent: an approver is asked again'] : []),
      ].join('; '),
    },
    (o) => windowWaitMessage(o, step, nonce, opensAt, playbook.texts),
    (o) =>
      o.state === 'running'
        ? { ...spendApprovals(o, []), state: 'waiting-window', windowWait: { step: step.id, nonce, since: now.toISOString(), opensAt } }
        : undefined,
  );
  if (waiting.windowWait?.nonce !== nonce) return true;
  ctx.log.info({ step: step.id, opensAt }, 'waiting for the maintenance window');
  if (opensAt !== undefined)
    await enqueueRun(deps.opsQueue, op.id, `window-${nonce}`, Math.max(0, Date.parse(opensAt) - now.getTime()) + 1000);
  await refreshRoot(deps, waiting);
  return true;
}

/**
 * The observed cluster, with the operation's own node kept in the role it was planned in once a
 * removal or replacement has begun and the node has left the sources: its remaining steps and its
 * follow-up are still about that node. Before the first step ran it must be observed like any node.
 */
export function withOwnNode(cluster: ClusterConfig, op: Operation, playbook: Pick<Playbook, 'targetLeaves'>): ClusterConfig {
  const node = op.target.node;
  const role = op.target.nodeRole;
  if (playbook.targetLeaves !== true || node === undefined || role === undefined || allNodes(cluster).includes(node)) return cluster;
  if (!op.steps.some((s) => s.status === 'done' || s.status === 'skipped')) return cluster;
  return role === 'controlplane'
    ? { ...cluster, controlPlanes: [...cluster.controlPlanes, node] }
    : { ...cluster, workers: [...cluster.workers, node] };
}

/**
 * What Redis gave back, checked against the observed estate, the version grammar and the version rules before it reaches an argv.
 * A removal's or replacement's own node may be gone once the operation has begun: taking it away is what it does.
 */
function storedFactsProblems(ctx: EngineContext, playbook: Playbook, op: Operation, step: Step): string[] {
  const nodes = allNodes(ctx.cluster);
  const problems: string[] = [];
  const begun = op.steps.some((s) => s.status === 'done' || s.status === 'skipped');
  for (const node of new Set([step.node, op.target.node])) {
    if (node === undefined || nodes.includes(node)) continue;
    if (playbook.targetLeaves === true && begun && node === op.target.node) continue;
    problems.push(`${node} is not a node of ${ctx.cluster.name}: neither etcd nor Kubernetes shows it now`);
  }
  let grammar = true;
  for (const version of [op.target.version, op.target.fromVersion, op.target.talosVersion]) {
    if (version !== undefined && !VERSION.test(version)) {
      grammar = false;
      problems.push(`the stored version ${JSON.stringify(version)} is not a version`);
    }
  }
  // The path that was approved must still be one the rules allow: an edited target is not a version's grammar away from harm.
  if (grammar && playbook.versionRules !== undefined)
    problems.push(...storedVersionProblems(playbook.versionRules, op.target, supportTable(ctx.deps.inventory)));
  return problems;
}

/**
 * The commit of the Terraform the operation works from, read once when its first run begins: the
 * bot's own checkout with a `terraformRepo`, else the `terraformDir`. A reviewed plan names its own
 * commit, which wins in the record; a later fetch (another cluster's plan moving the checkout) never
 * rewrites what this operation used. Kept whatever the ending, so a stopped or cancelled one has it too.
 */
async function recordCommit(ctx: EngineContext, opId: string): Promise<void> {
  const op = await ctx.deps.store.get(opId);
  if (op === undefined || op.commit !== undefined || !WALKING.includes(op.state)) return;
  const commit = await gitHead(terraformWorkDir(ctx.cluster));
  if (commit === undefined) return;
  await ctx.deps.store.update(opId, (o) => (o.commit === undefined && WALKING.includes(o.state) ? { ...o, commit } : undefined));
}

/**
 * Walks an operation's stored steps from the first unfinished one. A run ends when a step
 * needs a person (the click enqueues the next run), when it waits for a window, at the first
 * failure, or when done. Every write is a compare-and-set on the state it expects, so a
 * cancelled or stopped operation never moves again.
 */
export async function walkOperation(walk: WalkStart, opId: string, playbook: Playbook): Promise<void> {
  const board = liveBoard(walk.deps, opId, walk.log);
  try {
    await walkSteps(walk, opId, playbook, board);
  } finally {
    await board.close();
  }
}

async function walkSteps(walk: WalkStart, opId: string, playbook: Playbook, board: LiveBoard): Promise<void> {
  const holdsCluster = playbook.lock === 'cluster';
  // Every call that changes the cluster first checks the lock is still this operation's.
  const fenced = holdsCluster ? fencedContext(walk, opId) : walk;
  // The playbook writes its operation only through `record`, and another one only through `linkFollowUp`.
  const ctx = recordingContext(fenced, opId);
  const { deps } = ctx;
  await recordCommit(ctx, opId);
  for (;;) {
    const op = await deps.store.get(opId);
    if (!op || !WALKING.includes(op.state) || !isPosted(op)) return;
    const step = op.steps.find((s) => s.status === 'pending' || s.status === 'running');
    if (!step) {
      try {
        await complete(ctx, playbook, op);
      } catch (error) {
        if (ctx.signal?.aborted) throw error;
        const standing = await observeStanding(ctx, op.steps.at(-1)?.node);
        if (ctx.signal?.aborted) throw error;
        await stopAt(deps, ctx.log, playbook, opId, op.steps.at(-1)?.id ?? '', asFailure(error, ctx.log), standing);
      }
      return;
    }
    if (op.cancelRequestedBy !== undefined) {
      const refusal = cancelRefusal(op, (o) => playbook.cancelRefusal?.(o));
      if (refusal === undefined) return cancelBetweenSteps(ctx, playbook, op, op.cancelRequestedBy);
      ctx.log.info({ step: step.id }, 'cancel held until the step that must finish has');
    }
    checkpoint(deps);
    // The lock has no expiry, and Redis can still lose it (a failover, a restart without AOF, eviction): no step starts without it.
    if (holdsCluster) {
      try {
        await assertHoldsCluster(ctx, opId);
      } catch (error) {
        await stopAt(deps, ctx.log, playbook, opId, step.id, asFailure(error, ctx.log), await observeStanding(ctx, step.node));
        return;
      }
    }
    if (await waitsForWindow(ctx, playbook, op, step)) return;
    if (playbook.needsApproval(step) && (await approvalGate(ctx, playbook, op, step)) === 'wait') return;

    const startedAt = step.startedAt ?? deps.now().toISOString();
    const start = (o: Operation): Operation | undefined =>
      o.state === 'running' && o.steps.find((s) => s.id === step.id)?.status !== 'failed'
        ? withStep(o, step.id, { status: 'running', startedAt })
        : undefined;
    // A step's start and its entry are one write: a run that ends in between cannot lose the entry. A step
    // that was approved is announced by its edited request; the others say so in the thread.
    const startEntry = { actor: 'bot', event: `step started: ${playbook.texts.stepLabel(step)}` };
    const quiet = playbook.needsApproval(step) || playbook.quietStart?.(step) === true;
    const started =
      step.startedAt !== undefined
        ? (await deps.store.update(opId, (o) => start(o))).op
        : quiet
          ? await deps.audit.note(opId, startEntry, start)
          : await deps.audit.record(opId, startEntry, undefined, start);
    const current = started.steps.find((s) => s.id === step.id);
    if (started.state !== 'running' || current?.status !== 'running' || !isPosted(started)) return;
    board.repaint();
    // The step tells the board what it waits on; the board records it on the operation and edits the root.
    const stepCtx: WalkContext = {
      ...playbookContext(ctx),
      phase: (text, detail) => board.phase(step.id, text, detail),
      gateDone: (report) => deps.gateFinished?.(report, { by: 'operation', opId, title: operationTitle(started, playbook.texts) }),
    };

    let result;
    try {
      // The playbook's recheck derives from the stored target, so it runs only once that target is one the rules allow.
      const stored = storedFactsProblems(ctx, playbook, started, current);
      const problems = stored.length > 0 ? stored : ((await playbook.recheck?.(stepCtx, started, current)) ?? []);
      if (problems.length > 0)
        throw new StepFailure(
          'what the bot stored for this step no longer matches the nodes the sources show and the rules; nothing was run',
          problems,
        );
      result = await playbook.runStep(stepCtx, started, current);
    } catch (error) {
      // A cancelled run (the job's signal, or the lease lost to another run) is never a failure: the run that holds the operation goes on.
      if (ctx.signal?.aborted) throw error;
      // Where things stand is read before the stop is written, so the stop leads with it; the read never throws.
      const standing = await observeStanding(ctx, current.node);
      if (ctx.signal?.aborted) throw error;
      await stopAt(deps, ctx.log, playbook, opId, step.id, asFailure(error, ctx.log), standing);
      return;
    }
    const endedAt = deps.now().toISOString();
    const status = result.status ?? 'done';
    const finish = (o: Operation): Operation | undefined =>
      WALKING.includes(o.state) && o.steps.find((s) => s.id === step.id)?.status === 'running'
        ? { ...withStep(o, step.id, { status, endedAt, detail: result.detail }), phase: undefined }
        : undefined;
    const entry = { actor: 'bot', event: result.event, detail: result.detail };
    // A result without a reply of its own goes out with the next one: the thread gets one reply per step.
    if (result.message === undefined) await deps.audit.note(opId, entry, finish);
    else await deps.audit.record(opId, entry, result.message, finish);
    board.repaint();
  }
}

/**
 * The run job of every operation: opens a session with the talosctl matching the Talos the
 * operation planned against, and walks. A session that cannot open (credentials, binary)
 * stops the operation at its next step with the reason, rather than leaving it running.
 */
export function createRunJob(deps: OpsJobDeps, playbooks: Readonly<Partial<Record<Operation['kind'], Playbook>>>) {
  return async (job: Job<OperationJobData>, jobSignal?: AbortSignal): Promise<void> => {
    const { opId } = job.data;
    // A second run of the operation (a job run again after its lock lapsed, the next click) waits here, then walks from the stored state.
    await deps.runLease.hold(
      opId,
      async (signal) => {
        const op = await deps.store.get(opId);
        if (!op || !WALKING.includes(op.state)) return;
        // What Redis gave back is no longer the bot's record (a flush, an older copy): nothing it says is run.
        const lost = deps.redisLost?.();
        if (lost !== undefined) {
          deps.logger.error({ op: opId, job: job.id, reason: lost }, 'operation run refused: Redis lost the bot data');
          return;
        }
        const playbook = playbooks[op.kind];
        if (playbook === undefined) throw new UnknownKindError(op.id, op.kind);
        const cluster = operationCluster(deps.inventory, op);
        const log = deps.logger.child({ op: opId, cluster: cluster.name });
        log.info({ job: job.id }, 'operation run started');
        try {
          await deps.access.withSession(cluster, signal, async (session) => {
            const talosctl = await session.talosctl(op.target.talosVersion ?? op.target.fromVersion);
            const walked = withOwnNode(session.cluster, op, playbook);
            await walkOperation({ deps, cluster: walked, session, talosctl, log, signal }, opId, playbook);
          });
        } catch (error) {
          // A drain checkpoint goes back to the queue; a cancelled run leaves the operation to the run that holds it.
          if (signal.aborted || error instanceof DrainCheckpoint) throw error;
          const latest = await deps.store.get(opId);
          const step = latest?.steps.find((s) => s.status === 'pending' || s.status === 'running');
          if (!latest || !step || latest.state !== 'running') throw error;
          // A client that failed its check (changed on disk since its download) was never run: said as what it is.
          const failure = new StepFailure(
            isUntrustedTalosctl(error)
              ? `a talosctl failed its check, so nothing was run with it: ${errorText(error)}`
              : `the bot could not reach ${cluster.name}: ${errorText(error)}`,
          );
          await stopAt(deps, log, playbook, opId, step.id, failure, unknownStanding(cluster, 'the bot could not reach it', step.node));
        }
      },
      jobSignal,
    );
  };
}
