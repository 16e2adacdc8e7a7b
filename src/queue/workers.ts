import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { z } from 'zod';
import type { Logger } from '../log/logger.ts';
import { scrubError } from '../log/secret-scrubber.ts';
import { ActiveJobs } from './close-workers.ts';
import { parseJobData } from './job-data.ts';
import { retryDecision } from './retry-decision.ts';
import { OPS_JOB_DATA, OPS_QUEUE, READ_JOB_DATA, READ_QUEUE, type JobData, type OpsJobName, type ReadJobName } from './job-schemas.ts';

/** A job's processor: its `data` is what the dispatcher parsed against the job's schema, typed as that schema reads it. */
export type JobProcessor<D = unknown> = (job: Job<D>, signal?: AbortSignal) => Promise<unknown>;

/** One processor for every job of the read-only queue, each given its own job's data. */
export type ReadProcessors = { readonly [N in ReadJobName]: JobProcessor<JobData<N>> };
/** One processor for every job of the operations queue, each given its own job's data. */
export type OpsProcessors = { readonly [N in OpsJobName]: JobProcessor<JobData<N>> };

export interface WorkerOptions {
  connection: Redis;
  /** Processors by job name, for each queue: one for every job the queue takes. */
  read: ReadProcessors;
  ops: OpsProcessors;
  /** How long a job's lock lasts without renewal, in ms: a crashed replica's job moves to another after this. */
  jobLockMs: number;
  readConcurrency: number;
  /** Whether a processor's error is a drain checkpoint: the job goes back to the queue, not to failed. */
  isCheckpoint: (error: unknown) => boolean;
  logger: Logger;
  /** Blanks secrets out of a failed job's error before BullMQ stores its message and stack in Redis. */
  scrub?: (text: string) => string;
  /**
   * How long finished jobs are kept (`JOB_RETENTION_DAYS`, age in seconds) and how many at most per
   * queue; applies to every job that does not say otherwise. Default: 1000, without an age.
   */
  keepJobs?: { age?: number; count: number };
}

export interface Workers {
  read: Worker;
  ops: Worker;
  /** The processors running now; shutdown waits for these, not for BullMQ's close. */
  active: ActiveJobs;
  run(): void;
}

/**
 * Runs the job's processor once its data matches the job's schema: a job with bad data fails at
 * once, without retries ({@link JobDataError}), before any processor trusts it. The processor is
 * given the parsed data (unknown keys dropped where its schema does), so it never parses again.
 */
function dispatch<N extends string>(
  table: { readonly [K in N]: JobProcessor<never> },
  schemas: Readonly<Record<N, z.ZodType>>,
  scrub: (text: string) => string,
) {
  return async (job: Job, signal?: AbortSignal): Promise<unknown> => {
    const name = job.name as N;
    // The table pairs each name with the processor of that name's data, which the parse below gives it.
    const run = Object.hasOwn(table, name) ? (table[name] as JobProcessor) : undefined;
    // A name no processor takes (left in Redis by another version) fails at once: retrying cannot help.
    if (!run) throw new UnrecoverableError(`unknown job ${job.name}`);
    try {
      job.data = parseJobData(schemas[name], job);
      return await run(job, signal);
    } catch (error) {
      // Scrubbed before BullMQ stores it; a coded error the table calls final skips the attempts left.
      throw retryDecision(scrubError(error, scrub));
    }
  };
}

/** The two workers: read-only jobs many at a time, operations a few at a time with drain checkpoints. */
export function createWorkers(options: WorkerOptions): Workers {
  const { connection, jobLockMs, logger } = options;
  // A crashed replica's job is picked up by another once its lock lapses; resumes are many, so stalls never fail a job.
  const keep = options.keepJobs ?? { count: 1000 };
  const common = {
    connection,
    autorun: false,
    lockDuration: jobLockMs,
    stalledInterval: jobLockMs,
    maxStalledCount: 1000,
    removeOnComplete: keep,
    removeOnFail: keep,
  };
  const active = new ActiveJobs();
  const scrub = options.scrub ?? ((text: string): string => text);
  const read = dispatch(options.read, READ_JOB_DATA, scrub);
  const ops = dispatch(options.ops, OPS_JOB_DATA, scrub);
  const readWorker = new Worker(
    READ_QUEUE,
    active.wrap(async (job, _token, signal) => read(job, signal)),
    { ...common, concurrency: options.readConcurrency },
  );
  const opsWorker = new Worker(
    OPS_QUEUE,
    active.wrap(async (job, token, signal) => {
      try {
        return await ops(job, signal);
      } catch (error) {
        if (!options.isCheckpoint(error)) throw error;
        // Back to the queue, not failed: the next replica to take it continues from the stored state.
        logger.info({ job: job.id, queue: OPS_QUEUE }, 'operation checkpointed for shutdown');
        await job.moveToDelayed(Date.now() + 500, token);
        throw new DelayedError();
      }
    }),
    { ...common, concurrency: 4 },
  );
  for (const worker of [readWorker, opsWorker]) {
    // `job`, not `op`: this line has no cluster, and every line with an operation id names its cluster.
    worker.on('failed', (job, error) => logger.error({ job: job?.id, queue: worker.name, err: error.message }, 'job failed'));
    worker.on('error', (error) => logger.warn({ queue: worker.name, err: error.message }, 'worker error'));
  }
  return {
    read: readWorker,
    ops: opsWorker,
    active,
    run() {
      void readWorker.run();
      void opsWorker.run();
    },
  };
}
