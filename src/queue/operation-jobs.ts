import type { Queue } from 'bullmq';
import type { OpsJobName } from './job-schemas.ts';

/** The two jobs every operation runs on: the preflight that plans it and the run that walks its steps. */
export const PREFLIGHT_JOB_NAME: OpsJobName = 'operation-preflight';
export const RUN_JOB_NAME: OpsJobName = 'operation-run';

export const newNonce = (): string => crypto.randomUUID().replace(/-/g, '').slice(0, 12);

/** Finished jobs are kept as the workers' retention says (`JOB_RETENTION_DAYS`, at most 1000 per queue). */
const KEEP = {};

/**
 * Queues a run of the operation. `reason` makes the job id (one run per click, window or
 * resume), so a redelivered click does not queue a second; the run lease serialises the rest.
 */
export async function enqueueRun(queue: Queue, opId: string, reason: string, delayMs = 0): Promise<void> {
  await queue.add(RUN_JOB_NAME, { opId }, { ...KEEP, jobId: `${opId}-${reason}`, ...(delayMs > 0 ? { delay: delayMs } : {}) });
}

/** Queues the preflight; it is tried again when Slack fails under it, and then posts the plan that attempt could not. */
export async function enqueuePreflight(queue: Queue, opId: string): Promise<void> {
  await queue.add(PREFLIGHT_JOB_NAME, { opId }, { ...KEEP, jobId: `${opId}-preflight`, attempts: 6, backoff: { type: 'exponential', delay: 1000 } });
}

export const ENDED_JOB_NAME: OpsJobName = 'operation-ended';
export const PLAN_EXPIRY_JOB_NAME: OpsJobName = 'plan-expiry';

/**
 * Queues what follows the end of an operation (its maintenance record, giving back what it kept
 * on disk): once per state it ended in, so a stop and the cancel after it each leave a record.
 */
export async function enqueueEnded(queue: Queue, op: { id: string; state: string }): Promise<void> {
  await queue.add(ENDED_JOB_NAME, { opId: op.id }, { ...KEEP, jobId: `${op.id}-ended-${op.state}`, attempts: 6, backoff: { type: 'exponential', delay: 1000 } });
}
