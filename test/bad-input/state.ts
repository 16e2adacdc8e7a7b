/** What the bot keeps in Redis, read directly, so a test can prove an input changed nothing. */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { OPS_QUEUE, READ_QUEUE } from '../../src/queue/job-schemas.ts';
import { RECONCILE_JOB_NAME, RETENTION_SWEEP_JOB_NAME } from '../../src/queue/jobs.ts';

export interface BotState {
  /** Every `talos:` key (operations, their indexes, cluster locks) with its serialized value; delivery markers are left out. */
  keys: Record<string, string>;
  /** Jobs in each queue, over every state, except the ones the bot schedules for itself. */
  jobs: Record<string, number>;
}

export interface StateReader {
  read(): Promise<BotState>;
  /** The stored operation, parsed, or undefined. */
  operation(id: string): Promise<Record<string, unknown> | undefined>;
  redis: Redis;
  close(): Promise<void>;
}

/** Jobs the bot schedules for itself. */
const SCHEDULED: string[] = [RECONCILE_JOB_NAME, RETENTION_SWEEP_JOB_NAME];

const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'] as const;

export function stateReader(url: string): StateReader {
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const queues = [READ_QUEUE, OPS_QUEUE].map((name) => new Queue(name, { connection: redis }));
  return {
    redis,
    async read() {
      const names = (await redis.keys('talos:*')).filter((k) => !k.startsWith('talos:delivery:')).sort();
      const keys: Record<string, string> = {};
      for (const name of names) keys[name] = (await redis.dumpBuffer(name))?.toString('hex') ?? '';
      const jobs: Record<string, number> = {};
      for (const queue of queues) {
        // The reconciler and the retention sweep are scheduled jobs that come and go on their own; only work a command queued counts.
        const all = await queue.getJobs([...JOB_STATES]);
        jobs[queue.name] = all.filter((job) => !SCHEDULED.includes(job.name)).length;
      }
      return { keys, jobs };
    },
    async operation(id) {
      const raw = await redis.get(`talos:op:${id}`);
      return raw === null ? undefined : (JSON.parse(raw) as Record<string, unknown>);
    },
    async close() {
      await Promise.all(queues.map((q) => q.close()));
      await redis.quit();
    },
  };
}
