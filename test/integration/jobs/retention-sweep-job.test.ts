import { Queue, QueueEvents, Worker, type Job } from 'bullmq';
import { presentationOf } from '../../../jobs/playbooks/index.ts';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createRecordJob } from '../../../jobs/record-job.ts';
import { createRetentionSweepJob } from '../../../jobs/retention-sweep-job.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { createClusterLock } from '../../../src/ops/cluster-lock.ts';
import { createDeliveryDedupe } from '../../../src/ops/delivery-dedupe.ts';
import { newOperation, type Operation } from '../../../src/ops/operation.ts';
import { createOperationStore } from '../../../src/ops/operation-store.ts';
import { RecordingChat } from '../../support/engine-fixture.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();

const DAY = 86_400_000;
const RETENTION = 400 * DAY;
// Redis expires keys by the real clock, so the operations' times are relative to it.
const NOW = new Date();
const ago = (days: number): string => new Date(NOW.getTime() - days * DAY).toISOString();

function op(fields: Partial<Operation> & Pick<Operation, 'state'>): Operation {
  return newOperation({
    kind: 'snapshot',
    cluster: 'production',
    channel: 'C0MAINTPRD',
    requestedBy: 'U0ALICE',
    createdAt: ago(1),
    ...fields,
  });
}

/** Redis keys of the bot, sorted, without the ones every test shares. */
async function keys(): Promise<string[]> {
  return (await redis.client().keys('talos:*')).sort();
}

describe('retention of operations on a real Redis', () => {
  it('lets many operations that ended long ago go, keys and index entries, and keeps the live and the recent', async () => {
    // Arrange
    const client = redis.client();
    const store = createOperationStore(client, { retentionMs: RETENTION });
    const lock = createClusterLock(client);
    for (let i = 0; i < 300; i += 1) {
      await store.create(
        op({
          state: i % 3 === 0 ? 'completed' : i % 3 === 1 ? 'cancelled' : 'refused',
          cluster: i % 2 === 0 ? 'production' : 'retired',
          createdAt: ago(500 + i),
          endedAt: ago(499 + i),
        }),
      );
    }
    const recent = op({ state: 'completed', createdAt: ago(399), endedAt: ago(398) });
    const running = op({ state: 'running', createdAt: ago(900) });
    const waiting = op({ state: 'awaiting-approval', createdAt: ago(800) });
    const failedHolding = op({ state: 'failed', kind: 'talos-upgrade', createdAt: ago(700), endedAt: ago(699) });
    const failedReleased = op({ state: 'failed', createdAt: ago(600), endedAt: ago(599) });
    for (const o of [recent, running, waiting, failedHolding, failedReleased]) await store.create(o);
    await lock.acquire('production', failedHolding.id);
    const sweep = createRetentionSweepJob({
      store,
      lock,
      logger: createLogger({ level: 'silent', scrubber: new SecretScrubber() }),
      clock: { now: () => NOW },
      retentionMs: RETENTION,
    });

    // Act
    const { dropped } = await sweep();

    // Assert
    expect(dropped).toBe(301);
    const live = [recent, running, waiting, failedHolding].map((o) => o.id);
    expect(await keys()).toEqual(
      ['talos:lock:production', ...live.map((id) => `talos:op:${id}`), 'talos:ops', 'talos:ops:production'].sort(),
    );
    expect((await client.zrange('talos:ops', '0', '-1')).sort()).toEqual([...live].sort());
    expect((await client.zrange('talos:ops:production', '0', '-1')).sort()).toEqual([...live].sort());
    expect(await client.pttl(`talos:op:${running.id}`)).toBe(-1);
    expect(await client.pexpiretime(`talos:op:${recent.id}`)).toBe(Date.parse(recent.endedAt!) + RETENTION);
  });

  it('gives a finished operation an expiry at its end plus the retention, and none to a stopped one a Retry makes run again', async () => {
    // Arrange
    const client = redis.client();
    const store = createOperationStore(client, { retentionMs: RETENTION });
    const failed = op({ state: 'failed', createdAt: ago(2), endedAt: ago(1) });
    await store.create(failed);

    // Act
    const stopped = await client.pexpiretime(`talos:op:${failed.id}`);
    await store.update(failed.id, (o) => ({ ...o, state: 'running', endedAt: undefined }));
    const retried = await client.pexpiretime(`talos:op:${failed.id}`);
    await store.update(failed.id, (o) => ({ ...o, state: 'cancelled', endedAt: ago(1) }));
    const finished = await client.pexpiretime(`talos:op:${failed.id}`);

    // Assert
    expect(stopped).toBe(-1);
    expect(retried).toBe(-1);
    expect(finished).toBe(Date.parse(ago(1)) + RETENTION);
  });

  it('keeps every write of a finished operation under the same expiry (an audit reply posted after the end)', async () => {
    const client = redis.client();
    const store = createOperationStore(client, { retentionMs: RETENTION });
    const done = op({ state: 'completed', createdAt: ago(3), endedAt: ago(2) });
    await store.create(done);

    await store.update(done.id, (o) => ({ ...o, rootTs: '1700000000.000100' }));

    expect(await client.pexpiretime(`talos:op:${done.id}`)).toBe(Date.parse(ago(2)) + RETENTION);
  });

  it('gives the maintenance record of an operation that ended 399 days ago', async () => {
    // Arrange
    const store = createOperationStore(redis.client(), { retentionMs: RETENTION });
    const old = op({
      state: 'completed',
      kind: 'talos-upgrade',
      createdAt: ago(400),
      startedAt: ago(400),
      endedAt: ago(399),
      rootTs: '1600000000.000100',
      validation: 'every node on v1.12.1',
      target: { version: 'v1.12.1' },
    });
    await store.create(old);
    const chat = new RecordingChat();

    // Act
    await createRecordJob({ store, chat, presentations: presentationOf })({
      id: 'record-1',
      data: { opId: old.id, requestedBy: 'U0BOB' },
      attemptsStarted: 1,
    } as unknown as Job);

    // Assert
    expect(chat.thread('1600000000.000100')).toEqual([
      expect.stringContaining(`📒 Maintenance record of \`${old.id}\` (Talos upgrade to v1.12.1, completed)`),
    ]);
    expect(chat.uploads).toEqual([`${old.id}-maintenance-record.md`]);
  });
});

describe('retention of queue jobs', () => {
  it('removes finished jobs past their retention from a queue where no other job finishes to trigger it', async () => {
    // Arrange: three jobs finished and kept (by count only, as a quiet queue keeps them).
    const connection = new Redis(redis.server.url, { maxRetriesPerRequest: null });
    const queue = new Queue(`quiet-${crypto.randomUUID()}`, { connection });
    const listening = new Redis(redis.server.url, { maxRetriesPerRequest: null });
    const events = new QueueEvents(queue.name, { connection: listening });
    const worker = new Worker(queue.name, () => Promise.resolve('done'), { connection, removeOnComplete: { count: 1000 } });
    try {
      await events.waitUntilReady();
      for (const n of [1, 2, 3]) await (await queue.add('record', { n })).waitUntilFinished(events);
      const store = createOperationStore(redis.client(), { retentionMs: RETENTION });
      const sweep = createRetentionSweepJob({
        store,
        lock: createClusterLock(redis.client()),
        logger: createLogger({ level: 'silent', scrubber: new SecretScrubber() }),
        clock: { now: () => NOW },
        retentionMs: RETENTION,
        queues: [queue],
        jobRetentionMs: 0,
      });

      // Act
      const { cleaned } = await sweep();

      // Assert
      expect(cleaned).toBe(3);
      expect(await queue.getJobCounts('completed')).toEqual({ completed: 0 });
    } finally {
      await worker.close();
      await events.close();
      await queue.close();
      connection.disconnect();
      listening.disconnect();
    }
  });
});

describe('retention of delivery ids', () => {
  it('remembers a delivery for the configured time only', async () => {
    const client = redis.client();
    const dedupe = createDeliveryDedupe(client, 600);

    expect(await dedupe.claim('Ev01')).toBe(true);
    expect(await dedupe.claim('Ev01')).toBe(false);
    const ttl = await client.ttl('talos:delivery:Ev01');
    expect(ttl).toBeGreaterThan(590);
    expect(ttl).toBeLessThanOrEqual(600);
  });
});
