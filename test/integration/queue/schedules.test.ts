import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { syncSchedules } from '../../../src/queue/schedules.ts';
import { inventory } from '../../support/engine-fixture.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();

const EVERY_SECOND = inventory(`    schedules:
      healthGate: { cron: "* * * * * *", timeZone: Europe/Berlin, dailySummary: "08:00" }
      snapshot: { cron: "0 3 * * *", keepLast: 7 }`);

/** Fresh queues per test, on their own connections, as two replicas would have. */
function queues() {
  const connection = redis.client();
  return { read: new Queue(`read-${crypto.randomUUID()}`, { connection }), ops: new Queue(`ops-${crypto.randomUUID()}`, { connection }) };
}

describe('job schedulers from the inventory, on a real Redis', () => {
  it('schedules once however many replicas start, and the gate fires on its cron with the cluster as data', async () => {
    // Arrange
    const q = queues();
    const other = {
      read: new Queue(q.read.name, { connection: redis.client() }),
      ops: new Queue(q.ops.name, { connection: redis.client() }),
    };
    const seen: Job[] = [];
    // A worker blocks on Redis, so its connection never gives up on a command.
    const blocking = new Redis(redis.server.url, { maxRetriesPerRequest: null });
    const worker = new Worker(q.read.name, (job) => Promise.resolve(void seen.push(job)), { connection: blocking });

    try {
      // Act
      await Promise.all([syncSchedules(q, EVERY_SECOND), syncSchedules(other, EVERY_SECOND)]);
      await new Promise<void>((resolve) => {
        const check = (): void => (seen.filter((j) => j.name === 'scheduled-gate').length >= 2 ? resolve() : void setTimeout(check, 50));
        check();
      });

      // Assert
      const read = await q.read.getJobSchedulers(0, -1);
      expect(read.map((s) => [s.key, s.pattern, s.tz]).sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
        ['sched-gate-production', '* * * * * *', 'Europe/Berlin'],
        ['sched-summary-production', '0 8 * * *', 'Europe/Berlin'],
      ]);
      expect((await q.ops.getJobSchedulers(0, -1)).map((s) => [s.key, s.pattern, s.tz])).toEqual([
        ['sched-snapshot-production', '0 3 * * *', 'UTC'],
      ]);
      const gates = seen.filter((j) => j.name === 'scheduled-gate');
      expect(gates[0]!.data).toEqual({ cluster: 'production' });
      expect(new Set(gates.map((j) => j.id)).size).toBe(gates.length);
    } finally {
      await worker.close();
      blocking.disconnect();
      await Promise.all([q.read, q.ops, other.read, other.ops].map((x) => x.close()));
    }
  });

  it('removes at start-up the schedulers of a cluster, or a schedule, that left the inventory, and leaves others alone', async () => {
    // Arrange
    const q = queues();
    try {
      await syncSchedules(q, EVERY_SECOND);
      await q.ops.upsertJobScheduler(
        'sched-snapshot-retired',
        { pattern: '0 * * * *' },
        { name: 'scheduled-snapshot', data: { cluster: 'retired' } },
      );
      await q.ops.upsertJobScheduler('ops-reconcile', { every: 10_000 }, { name: 'ops-reconcile' });

      // Act
      const sync = await syncSchedules(
        q,
        inventory(`    schedules:
      healthGate: { cron: "*/15 * * * *" }`),
      );

      // Assert
      expect(sync.removed.sort()).toEqual(['sched-snapshot-production', 'sched-snapshot-retired', 'sched-summary-production']);
      expect((await q.read.getJobSchedulers(0, -1)).map((s) => [s.key, s.pattern])).toEqual([['sched-gate-production', '*/15 * * * *']]);
      expect((await q.ops.getJobSchedulers(0, -1)).map((s) => s.key)).toEqual(['ops-reconcile']);
    } finally {
      await Promise.all([q.read.close(), q.ops.close()]);
    }
  });
});
