import type { JobsOptions } from 'bullmq';
import {
  OPS_JOB_DATA,
  READ_JOB_DATA,
  type JobData,
  type OpsJobName,
  type OpsQueue,
  type ReadJobName,
  type ReadQueue,
} from './job-schemas.ts';

/**
 * Every job the bot queues: its name, its id and its options are decided here and nowhere else.
 * Ids are what make a redelivered click, command or resume land on the job already queued
 * (BullMQ keeps one job per id), so each is built from what identifies the request.
 */

export const PREFLIGHT_JOB_NAME = 'operation-preflight' satisfies OpsJobName;
export const RUN_JOB_NAME = 'operation-run' satisfies OpsJobName;
export const ENDED_JOB_NAME = 'operation-ended' satisfies OpsJobName;
export const PLAN_EXPIRY_JOB_NAME = 'plan-expiry' satisfies OpsJobName;
export const APPROVAL_EXPIRY_JOB_NAME = 'approval-expiry' satisfies OpsJobName;
export const APPROVAL_REMINDER_JOB_NAME = 'approval-reminder' satisfies OpsJobName;
export const CANCELLED_JOB_NAME = 'operation-cancelled' satisfies OpsJobName;
export const RECONCILE_JOB_NAME = 'ops-reconcile' satisfies OpsJobName;
export const RETENTION_SWEEP_JOB_NAME = 'retention-sweep' satisfies OpsJobName;
export const SCHEDULED_SNAPSHOT_JOB_NAME = 'scheduled-snapshot' satisfies OpsJobName;
export const SCHEDULED_GATE_JOB_NAME = 'scheduled-gate' satisfies ReadJobName;
export const GATE_SUMMARY_JOB_NAME = 'scheduled-gate-summary' satisfies ReadJobName;

/** Finished jobs are kept as the workers' retention says (`JOB_RETENTION_DAYS`, at most 1000 per queue). */
const KEEP: JobsOptions = {};

/** A job whose failure leaves an operation's messages stale: tried again while Slack or Redis recovers (1 s, 2 s, … 32 s). */
const PERSISTENT: JobsOptions = { attempts: 6, backoff: { type: 'exponential', delay: 1000 } };

/** A scheduled job that failed is kept a while for inspection; the next tick does not wait for it. */
export const SCHEDULED_JOB_OPTIONS = { removeOnComplete: true, removeOnFail: 100 } satisfies JobsOptions;

/** BullMQ job ids may not contain `:`; Slack ids and trigger ids are mapped into a safe alphabet. */
export function jobIdFor(kind: string, ...parts: string[]): string {
  return [kind, ...parts].join('-').replace(/[^A-Za-z0-9_.-]/g, '_');
}

/** A nonce for an approval request or a step's run: lower-case letters and digits, as the job schemas require. */
export const newNonce = (): string => crypto.randomUUID().replace(/-/g, '').slice(0, 12);

/** Adds a read-only job; its data is checked against the job's schema before it reaches Redis. */
async function addRead<N extends ReadJobName>(queue: ReadQueue, name: N, data: JobData<N>, options: JobsOptions): Promise<void> {
  await queue.add(name, READ_JOB_DATA[name].parse(data), options);
}

/** Adds an operations job; its data is checked against the job's schema before it reaches Redis. */
async function addOps<N extends OpsJobName>(queue: OpsQueue, name: N, data: JobData<N>, options: JobsOptions): Promise<void> {
  await queue.add(name, OPS_JOB_DATA[name].parse(data), options);
}

/** `/talos health`: one job per invocation (the trigger id), so a redelivered command maps to the same job. */
export function enqueueHealth(queue: ReadQueue, data: JobData<'health'>, triggerId: string): Promise<void> {
  return addRead(queue, 'health', data, { ...KEEP, jobId: jobIdFor('health', triggerId) });
}

/** `/talos gates`: one job per invocation. */
export function enqueueGates(queue: ReadQueue, data: JobData<'gates'>, triggerId: string): Promise<void> {
  return addRead(queue, 'gates', data, { ...KEEP, jobId: jobIdFor('gates', triggerId) });
}

/** `/talos record <op>`: one job per invocation; each posts its own summary. */
export function enqueueRecord(queue: ReadQueue, data: JobData<'record'>, triggerId: string): Promise<void> {
  return addRead(queue, 'record', data, { ...KEEP, jobId: jobIdFor('record', triggerId) });
}

/**
 * Queues a run of the operation. `reason` makes the job id (one run per click, window or
 * resume), so a redelivered click does not queue a second; the run lease serialises the rest.
 */
export async function enqueueRun(queue: OpsQueue, opId: string, reason: string, delayMs = 0): Promise<void> {
  await addOps(queue, RUN_JOB_NAME, { opId }, { ...KEEP, jobId: runJobId(opId, reason), ...(delayMs > 0 ? { delay: delayMs } : {}) });
}

/** The id of the operation's run queued for `reason`; `resume` is the reconciler's. */
export const runJobId = (opId: string, reason: string): string => `${opId}-${reason}`;

/** Queues the preflight; it is tried again when Slack fails under it, and then posts the plan that attempt could not. */
export async function enqueuePreflight(queue: OpsQueue, opId: string): Promise<void> {
  await addOps(queue, PREFLIGHT_JOB_NAME, { opId }, { ...KEEP, jobId: `${opId}-preflight`, ...PERSISTENT });
}

/**
 * Queues what follows the end of an operation (its maintenance record, giving back what it kept
 * on disk): once per state it ended in, so a stop and the cancel after it each leave a record.
 */
export async function enqueueEnded(queue: OpsQueue, op: { id: string; state: string }): Promise<void> {
  await addOps(queue, ENDED_JOB_NAME, { opId: op.id }, { ...KEEP, jobId: `${op.id}-ended-${op.state}`, ...PERSISTENT });
}

/** The messages of a cancelled operation are edited by this job, so the command or click that cancelled answers first. */
export async function enqueueCancelled(queue: OpsQueue, opId: string): Promise<void> {
  await addOps(queue, CANCELLED_JOB_NAME, { opId }, { jobId: `${opId}-cancelled`, ...PERSISTENT });
}

/** The end of a plan's offer, `delayMs` from now; kept like other finished jobs, at most 1000. */
export async function enqueuePlanExpiry(queue: OpsQueue, opId: string, delayMs: number): Promise<void> {
  await addOps(
    queue,
    PLAN_EXPIRY_JOB_NAME,
    { opId },
    { jobId: `${opId}-plan-expiry`, delay: delayMs, removeOnComplete: 1000, removeOnFail: 1000 },
  );
}

/** The end of one approval request (its nonce), `delayMs` from now. */
export async function enqueueApprovalExpiry(queue: OpsQueue, opId: string, nonce: string, delayMs: number): Promise<void> {
  await addOps(
    queue,
    APPROVAL_EXPIRY_JOB_NAME,
    { opId, nonce },
    { jobId: `${opId}-expire-${nonce}`, delay: delayMs, removeOnComplete: true },
  );
}

/** The reminder of one approval request (its nonce), `delayMs` from now. */
export async function enqueueApprovalReminder(queue: OpsQueue, opId: string, nonce: string, delayMs: number): Promise<void> {
  await addOps(
    queue,
    APPROVAL_REMINDER_JOB_NAME,
    { opId, nonce },
    { jobId: `${opId}-remind-${nonce}`, delay: delayMs, removeOnComplete: true },
  );
}

/**
 * One schedule of the reconciler for every replica (the same scheduler id everywhere: BullMQ
 * keeps one per id), every `everyMs`: operations left without a run get one, unposted audit
 * replies get posted.
 */
export async function scheduleReconcile(queue: OpsQueue, everyMs: number): Promise<void> {
  await queue.upsertJobScheduler(RECONCILE_JOB_NAME, { every: everyMs }, { name: RECONCILE_JOB_NAME, opts: SCHEDULED_JOB_OPTIONS });
}

/** The hourly retention sweep, one schedule for every replica: it trims the operation indexes; the keys themselves expire by their TTL. */
export async function scheduleRetentionSweep(queue: OpsQueue): Promise<void> {
  await queue.upsertJobScheduler(
    RETENTION_SWEEP_JOB_NAME,
    { every: 3_600_000 },
    { name: RETENTION_SWEEP_JOB_NAME, opts: SCHEDULED_JOB_OPTIONS },
  );
}
