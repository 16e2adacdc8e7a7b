import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { BotError } from '../../../src/errors.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { OPS_JOB_DATA, OPS_QUEUE, READ_JOB_DATA, type OpsJobName, type ReadJobName } from '../../../src/queue/job-schemas.ts';
import { createWorkers, type JobProcessor, type Workers } from '../../../src/queue/workers.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();

/** Real workers whose every processor records the job it ran and then does what `run` says. */
function workersRunning(run: (job: Job) => Promise<unknown>): { workers: Workers; ran: string[] } {
  const ran: string[] = [];
  const processor: JobProcessor = (job) => (ran.push(String(job.id)), run(job));
  const table = <N extends string>(names: N[]): Record<N, JobProcessor> =>
    Object.fromEntries(names.map((n) => [n, processor])) as Record<N, JobProcessor>;
  const workers = createWorkers({
    // Workers block on Redis, so their connection never gives up on a command.
    connection: new Redis(redis.server.url, { maxRetriesPerRequest: null }),
    read: table(Object.keys(READ_JOB_DATA) as ReadJobName[]),
    ops: table(Object.keys(OPS_JOB_DATA) as OpsJobName[]),
    jobLockMs: 5000,
    readConcurrency: 1,
    isCheckpoint: () => false,
    logger: createLogger({ level: 'silent', scrubber: new SecretScrubber() }),
  });
  workers.run();
  return { workers, ran };
}

/** Resolves with the job once the worker has failed it for good (no attempt left, or not retryable). */
function failedForGood(workers: Workers, jobId: string): Promise<Job> {
  return new Promise((resolve) => {
    workers.ops.on('failed', (job) => {
      if (job?.id === jobId && (job.finishedOn !== undefined || job.attemptsMade >= (job.opts.attempts ?? 1))) resolve(job);
    });
  });
}

describe('job data checked by the workers, on a real Redis', () => {
  it('fails a job of a name no processor takes (left by another version) at once, without retries', async () => {
    // Arrange
    const { workers, ran } = workersRunning(() => Promise.resolve('ran'));
    const queue = new Queue(OPS_QUEUE, { connection: redis.client() });
    try {
      const failed = failedForGood(workers, 'retired-name');

      // Act
      await queue.add('no-such-job', { opId: 'op-abc123' }, { jobId: 'retired-name', attempts: 6, backoff: { type: 'fixed', delay: 10 } });
      const job = await failed;

      // Assert
      expect(job.attemptsMade).toBe(1);
      expect(await queue.getJobState('retired-name')).toBe('failed');
      expect(job.failedReason).toBe('unknown job no-such-job');
      expect(ran).toEqual([]);
    } finally {
      await workers.read.close(true);
      await workers.ops.close(true);
      await queue.close();
    }
  });

  it('fails a job whose data does not match its schema at once, without retries and without running its processor', async () => {
    // Arrange
    const { workers, ran } = workersRunning(() => Promise.resolve('ran'));
    const queue = new Queue(OPS_QUEUE, { connection: redis.client() });
    try {
      const failed = failedForGood(workers, 'bad-preflight');

      // Act: a preflight, which is tried 6 times, carrying a cluster name where its operation id belongs
      await queue.add(
        'operation-preflight',
        { opId: 'production; rm -rf /' },
        { jobId: 'bad-preflight', attempts: 6, backoff: { type: 'fixed', delay: 10 } },
      );
      const job = await failed;

      // Assert
      expect(job.attemptsMade).toBe(1);
      expect(await queue.getJobState('bad-preflight')).toBe('failed');
      expect(job.failedReason).toMatch(/^job operation-preflight bad-preflight has data that does not match its schema \(opId: /);
      expect(ran).toEqual([]);
    } finally {
      await workers.read.close(true);
      await workers.ops.close(true);
      await queue.close();
    }
  });

  it('still retries a job with good data whose processor failed', async () => {
    // Arrange
    const { workers, ran } = workersRunning(() => Promise.reject(new Error('Slack did not answer')));
    const queue = new Queue(OPS_QUEUE, { connection: redis.client() });
    try {
      const failed = failedForGood(workers, 'op-abc123-preflight');

      // Act
      await queue.add(
        'operation-preflight',
        { opId: 'op-abc123' },
        { jobId: 'op-abc123-preflight', attempts: 3, backoff: { type: 'fixed', delay: 10 } },
      );
      const job = await failed;

      // Assert
      expect(job.attemptsMade).toBe(3);
      expect(ran).toEqual(['op-abc123-preflight', 'op-abc123-preflight', 'op-abc123-preflight']);
    } finally {
      await workers.read.close(true);
      await workers.ops.close(true);
      await queue.close();
    }
  });

  it('fails a job at once, without its remaining attempts, when its processor throws a coded error the table calls final', async () => {
    // Arrange: exec-failed is not retryable in the error table
    const { workers, ran } = workersRunning(() => Promise.reject(new BotError('exec-failed', 'talosctl exited 1')));
    const queue = new Queue(OPS_QUEUE, { connection: redis.client() });
    try {
      const failed = failedForGood(workers, 'op-final1-preflight');

      // Act
      await queue.add(
        'operation-preflight',
        { opId: 'op-final1' },
        { jobId: 'op-final1-preflight', attempts: 4, backoff: { type: 'fixed', delay: 10 } },
      );
      const job = await failed;

      // Assert
      expect(job.attemptsMade).toBe(1);
      expect(ran).toEqual(['op-final1-preflight']);
      expect(await queue.getJobState('op-final1-preflight')).toBe('failed');
      expect(job.failedReason).toBe('talosctl exited 1');
    } finally {
      await workers.read.close(true);
      await workers.ops.close(true);
      await queue.close();
    }
  });

  it('tries a job again when its processor throws a coded error the table calls retryable', async () => {
    // Arrange: exec-timeout is retryable in the error table
    const { workers, ran } = workersRunning(() => Promise.reject(new BotError('exec-timeout', 'talosctl timed out')));
    const queue = new Queue(OPS_QUEUE, { connection: redis.client() });
    try {
      const failed = failedForGood(workers, 'op-again1-preflight');

      // Act
      await queue.add(
        'operation-preflight',
        { opId: 'op-again1' },
        { jobId: 'op-again1-preflight', attempts: 3, backoff: { type: 'fixed', delay: 10 } },
      );
      const job = await failed;

      // Assert
      expect(job.attemptsMade).toBe(3);
      expect(ran).toEqual(['op-again1-preflight', 'op-again1-preflight', 'op-again1-preflight']);
    } finally {
      await workers.read.close(true);
      await workers.ops.close(true);
      await queue.close();
    }
  });

  it('hands the processor the data as its schema parsed it, not as Redis held it', async () => {
    // Arrange: the retention sweep's schema keeps no field; a scheduler of another version left one
    const seen: unknown[] = [];
    const { workers } = workersRunning((job) => Promise.resolve(seen.push(job.data)));
    const queue = new Queue(OPS_QUEUE, { connection: redis.client() });
    try {
      const done = new Promise<void>((resolve) => workers.ops.on('completed', (job) => job.id === 'sweep-1' && resolve()));

      // Act
      await queue.add('retention-sweep', { leftover: 'from another version' }, { jobId: 'sweep-1' });
      await done;

      // Assert
      expect(seen).toEqual([{}]);
    } finally {
      await workers.read.close(true);
      await workers.ops.close(true);
      await queue.close();
    }
  });
});
