import { UnrecoverableError, type Job } from 'bullmq';
import type { z } from 'zod';
import { ERROR_CODES, type CodedError } from '../errors.ts';

/**
 * A job whose data does not match its schema (written by a replica of another version, or by
 * hand): no retry can fix it, so it is BullMQ's `UnrecoverableError`, which fails the job at
 * once whatever attempts are left, and it carries the bot's code like every other error.
 */
export class JobDataError extends UnrecoverableError implements CodedError {
  readonly code = 'job-data-invalid';
  readonly retryable = ERROR_CODES['job-data-invalid'].retryable;

  constructor(job: Pick<Job, 'name' | 'id'>, issues: readonly z.core.$ZodIssue[]) {
    const where = issues.map((i) => `${i.path.map(String).join('.') || '(data)'}: ${i.message}`).join('; ');
    super(
      `job ${job.name}${job.id === undefined ? '' : ` ${job.id}`} has data that does not match its schema (${where}); it is not tried again`,
    );
    this.name = 'JobDataError';
  }
}

/** The job's data as its schema reads it; throws {@link JobDataError} when it does not match. */
export function parseJobData<S extends z.ZodType>(schema: S, job: Pick<Job, 'name' | 'id' | 'data'>): z.infer<S> {
  const parsed = schema.safeParse(job.data);
  if (!parsed.success) throw new JobDataError(job, parsed.error.issues);
  return parsed.data;
}
