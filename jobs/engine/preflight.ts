import type { Job } from 'bullmq';
import { UnknownKindError } from './unknown-kind.ts';
import { errorText } from '../../src/chat/error-text.ts';
import { isUntrustedTalosctl } from '../../src/talos/talosctl-binary.ts';
import type { Operation } from '../../src/ops/operation.ts';
import type { OperationJobData } from '../../src/queue/job-schemas.ts';
import { operationCluster, type OpsJobDeps } from './job-context.ts';
import { enqueueRun, newNonce } from '../../src/queue/operation-jobs.ts';
import { heldByRefusal } from './held-by.ts';
import { isPosted, type Playbook, type PreflightOutcome } from './playbook.ts';
import { runCommonChecks, snapshotPlacementRefusal } from './preflight-checks.ts';
import { enqueuePlanExpiry } from './plan-expiry.ts';
import { operationRootMessage } from '../../src/chat/operation-root.ts';
import { refreshRoot } from './root-message.ts';
import { followUpLinker, playbookDeps } from './record.ts';
import { threadLink } from '../../src/ops/thread-link.ts';
import { describeItem, type Baseline } from '../../src/health/baseline.ts';
import { namedNodeCheck } from '../../src/rules/node-resolution.ts';

/** The preflight's entry names what was already unwell, so the thread and the record keep it. */
function baselineDetail(baseline: Baseline | undefined): string {
  if (baseline === undefined || baseline.items.length === 0) return '';
  return `; baseline taken, already failing before the operation: ${baseline.items.map(describeItem).join('; ')}`;
}

/**
 * Posts the plan or the refusal as the operation's root message, then the audit entries waiting for
 * its thread. `maybeSent`: an earlier attempt may have posted it before failing to store where.
 */
async function postRoot(deps: OpsJobDeps, op: Operation, maybeSent: boolean): Promise<void> {
  const { ts } = await deps.chat.post(op.channel, operationRootMessage(op, deps.presentations(op.kind)), {
    key: `${op.id}-root`,
    maybeSent,
  });
  const { op: stored } = await deps.store.update(op.id, (o) => (o.rootTs === undefined ? { ...o, rootTs: ts } : undefined));
  // Changed while the post was retried (an override from a copy Slack showed, a cancel): show it as it is now.
  if (stored.revision !== op.revision + 1) await refreshRoot(deps, stored);
  await deps.audit.flush(op.id);
}

/**
 * The cluster's lock for an operation that starts with its request: taken fresh, or handed over
 * by the operation it follows (a rollback from a stopped upgrade). Returns the refusal, or a
 * function that gives the lock back when the operation turns out cancelled meanwhile.
 */
async function takeLock(
  deps: OpsJobDeps,
  cluster: string,
  op: Operation,
  from: string | undefined,
): Promise<{ refusal: string } | { giveBack: () => Promise<void> }> {
  if (from !== undefined) {
    if (await deps.lock.transfer(cluster, from, op.id))
      return { giveBack: async () => void (await deps.lock.transfer(cluster, op.id, from)) };
    return { refusal: `the lock of ${cluster} is no longer held by ${from}; run the command again` };
  }
  const lock = await deps.lock.acquire(cluster, op.id);
  if (!lock.ok) return { refusal: await heldByRefusal(deps, cluster, lock.heldBy) };
  return { giveBack: async () => void (await deps.lock.release(cluster, op.id)) };
}

/**
 * The preflight of every operation: touches nothing; records the refusal or the plan in one
 * write with its entry, then posts it. A plan waits for an operator's Start; an operation that
 * starts with its request takes the lock (if its playbook holds one) and gets its run. The write is a compare-and-set on
 * `preflight`: a cancel that came first stays, and the lock taken for it is given back.
 */
export function createPreflightJob(deps: OpsJobDeps, playbooks: Readonly<Partial<Record<Operation['kind'], Playbook>>>) {
  return async (job: Job<OperationJobData>, signal?: AbortSignal): Promise<void> => {
    const { opId } = job.data;
    const op = await deps.store.get(opId);
    if (!op) return;
    const lost = deps.redisLost?.();
    if (lost !== undefined) {
      deps.logger.error({ op: opId, job: job.id, reason: lost }, 'preflight refused: Redis lost the bot data');
      return;
    }
    const playbook = playbooks[op.kind];
    if (playbook === undefined) throw new UnknownKindError(op.id, op.kind);
    if (op.state !== 'preflight') {
      // A retry (Slack failed under the last attempt) posts the root message that attempt could not, and queues its run.
      if (op.rootTs === undefined) await postRoot(deps, op, true);
      if (playbook.start === 'run' && op.state === 'running') await enqueueRun(deps.opsQueue, opId, 'run');
      return;
    }
    const cluster = operationCluster(deps.inventory, op);
    let outcome: PreflightOutcome;
    let baseline: Baseline | undefined;
    try {
      outcome = await deps.access.withSession(cluster, signal, async (session) => {
        // A bot on the cluster must move first: nothing else is worth checking (or planning, or downloading) from there.
        const misplaced = await snapshotPlacementRefusal(deps, session, playbook.checks, signal);
        if (misplaced !== undefined) return { refusals: [misplaced], notes: [], steps: [], target: {} };
        // A node the command named: its address must still carry that name now, or nothing else is worth checking.
        const named =
          op.target.namedAs && op.target.node
            ? namedNodeCheck(cluster, op.target.node, op.target.namedAs, session.cluster.nodeNames ?? {})
            : {};
        if (named.refusal !== undefined) return { refusals: [named.refusal], notes: [], steps: [], target: {} };
        // The playbook reads operations; the engine links the thread of one and records a follow-up on another.
        const preflightDeps = {
          ...playbookDeps(deps),
          linkFollowUp: followUpLinker(deps.store),
          link: (o: Operation) => threadLink(deps, o),
        };
        const found = await playbook.preflight(preflightDeps, session.cluster, op, session, signal);
        const own = named.note === undefined ? found : { ...found, notes: [named.note, ...found.notes] };
        // The refusals every playbook that declares them shares, after its own and in the same words.
        // The operation as its own preflight planned it: what it targets and changes decides which disagreement it resolves.
        const planned = { ...op, target: { ...op.target, ...own.target }, ...(own.data ? { data: { ...op.data, ...own.data } } : {}) };
        const common = await runCommonChecks(deps, session.cluster, session, playbook, planned, own.common ?? {}, signal);
        baseline = common.baseline;
        return {
          ...own,
          // A playbook may refuse early what a common check refuses too (a closed window): said once.
          refusals: [...new Set([...own.refusals, ...common.refusals])],
          notes: [...own.notes, ...common.notes],
          takesLockFrom: own.takesLockFrom ?? common.takesLockFrom,
        };
      });
    } catch (error) {
      // A talosctl that failed its check is a finding of the preflight, not a fault of it: said as what it is.
      const refusal = isUntrustedTalosctl(error)
        ? `a talosctl failed its check, so nothing was run with it: ${errorText(error)}`
        : `preflight could not complete: ${errorText(error)}`;
      outcome = { refusals: [refusal], notes: [], steps: [], target: {} };
    }
    let giveBack: (() => Promise<void>) | undefined;
    // A playbook that holds no lock (a snapshot) starts without one, whoever holds the cluster.
    if (outcome.refusals.length === 0 && playbook.start === 'run' && playbook.lock === 'cluster') {
      const taken = await takeLock(deps, cluster.name, op, outcome.takesLockFrom);
      if ('refusal' in taken) outcome.refusals.push(taken.refusal);
      else giveBack = taken.giveBack;
    }
    const refused = outcome.refusals.length > 0;
    const runsNow = !refused && playbook.start === 'run';
    const now = deps.now().toISOString();
    // The plan and its entry are one write, so the entry is #1 even when Slack shows the plan (a 5xx after
    // posting it) and someone starts it before the bot learned where it is; the thread gets it once it knows.
    const entry = {
      actor: 'bot',
      event: refused ? 'preflight refused' : 'preflight passed, plan posted',
      detail: refused ? outcome.refusals.join('; ') : `${outcome.steps.length} steps${baselineDetail(baseline)}`,
    };
    // The last attempt of the compare-and-set decides whether the plan was written.
    let written = false;
    const plan = (o: Operation): Operation | undefined => {
      written = o.state === 'preflight';
      return !written
        ? undefined
        : {
            ...o,
            state: refused ? 'refused' : runsNow ? 'running' : 'planned',
            refusals: outcome.refusals,
            notes: outcome.notes,
            ...(outcome.consequences?.length ? { consequences: outcome.consequences } : {}),
            ...(outcome.mechanics?.length ? { mechanics: outcome.mechanics } : {}),
            steps: outcome.steps,
            target: { ...o.target, ...outcome.target },
            planNonce: !refused && !runsNow ? newNonce() : undefined,
            rehearsal: outcome.rehearsal,
            ...(outcome.data ? { data: { ...o.data, ...outcome.data } } : {}),
            ...(!refused && baseline !== undefined ? { baseline } : {}),
            // The operator's request is the start of these operations.
            startedBy: runsNow ? o.requestedBy : o.startedBy,
            startedAt: runsNow ? now : o.startedAt,
            endedAt: refused ? now : undefined,
          };
    };
    // A refusal goes under the plan at once; a passed preflight's entry waits for the next reply.
    const planned = refused ? await deps.audit.record(opId, entry, undefined, plan) : await deps.audit.note(opId, entry, plan);
    if (!written) {
      // Not written: the operation was cancelled while its preflight ran.
      await giveBack?.();
      deps.logger.info(
        { op: opId, cluster: cluster.name, state: planned.state },
        'preflight ended on an operation that was cancelled meanwhile',
      );
      return;
    }
    if (planned.rootTs === undefined) await postRoot(deps, planned, false);
    else await refreshRoot(deps, planned);
    const posted = await deps.store.get(opId);
    if (posted !== undefined && isPosted(posted)) await playbook.posted?.(deps, posted);
    if (refused) await playbook.ended?.(deps, planned);
    // A plan waits for its Start only so long: then it expires, and its buttons with it.
    if (planned.state === 'planned') await enqueuePlanExpiry(deps, planned);
    if (runsNow) await enqueueRun(deps.opsQueue, opId, 'run');
  };
}
