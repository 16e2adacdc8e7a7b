import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createRunLease } from '../../../src/ops/run-lease.ts';
import { resendingOnce } from '../../support/resending-redis.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();

describe('run lease on a real Redis', () => {
  it('lets a second run of an operation start only after the first returned, across replicas', async () => {
    // Arrange
    const replicaA = createRunLease(redis.client(), { ttlMs: 1000, pollMs: 20 });
    const replicaB = createRunLease(redis.client(), { ttlMs: 1000, pollMs: 20 });
    const log: string[] = [];
    const run = (name: string) => async (): Promise<void> => {
      log.push(`${name} begins`);
      await sleep(150);
      log.push(`${name} ends`);
    };

    // Act
    const first = replicaA.hold('op-aaaa1111', run('first'));
    await sleep(30);
    await Promise.all([first, replicaB.hold('op-aaaa1111', run('second'))]);

    // Assert
    expect(log).toEqual(['first begins', 'first ends', 'second begins', 'second ends']);
  });

  it('does not hold up another operation', async () => {
    // Arrange
    const lease = createRunLease(redis.client(), { ttlMs: 1000, pollMs: 20 });
    const log: string[] = [];

    // Act
    await Promise.all([
      lease.hold('op-aaaa1111', async () => {
        await sleep(150);
        log.push('a');
      }),
      lease.hold('op-bbbb2222', async () => {
        log.push('b');
      }),
    ]);

    // Assert
    expect(log).toEqual(['b', 'a']);
  });

  it('keeps the lease past its time-to-live while the run goes on', async () => {
    // Arrange
    const lease = createRunLease(redis.client(), { ttlMs: 150, pollMs: 20 });
    let secondStartedEarly = false;

    // Act
    let firstDone = false;
    const first = lease.hold('op-aaaa1111', async () => {
      await sleep(500);
      firstDone = true;
    });
    await sleep(30);
    await lease.hold('op-aaaa1111', async () => {
      secondStartedEarly = !firstDone;
    });
    await first;

    // Assert
    expect(secondStartedEarly).toBe(false);
  });

  it('passes to the next run once a crashed holder stops renewing it', async () => {
    // Arrange: a holder that died leaves its key behind, with its deadline.
    const client = redis.client();
    await client.set('talos:op-run:op-aaaa1111', 'dead-replica', 'PX', 200);
    const lease = createRunLease(client, { ttlMs: 1000, pollMs: 20 });
    const started = Date.now();

    // Act
    const waited = await lease.hold('op-aaaa1111', async () => Date.now() - started);

    // Assert
    expect(waited).toBeGreaterThanOrEqual(150);
  });

  it('tells the run when another run took the lease, so it stops', async () => {
    // Arrange
    const client = redis.client();
    const lease = createRunLease(client, { ttlMs: 150, pollMs: 20 });

    // Act: the key is taken over under the holder, as after a Redis restart past its deadline.
    const aborted = await lease.hold('op-aaaa1111', async (signal) => {
      await client.set('talos:op-run:op-aaaa1111', 'another-run', 'PX', 5000);
      await sleep(300);
      return signal.aborted;
    });

    // Assert
    expect(aborted).toBe(true);
    expect(await client.get('talos:op-run:op-aaaa1111')).toBe('another-run');
  });

  it('holds at once when its take landed but the reply was lost and the client sent it again', async () => {
    // Arrange: the second SET (ioredis resending after Redis restarted) finds our own token there.
    const client = redis.client();
    const controller = new AbortController();
    // Were the lease to wait for itself, this ends the wait with an error.
    const resending = resendingOnce(client, 'set', () => setTimeout(() => controller.abort(new Error('waited for its own lease')), 50));
    const lease = createRunLease(resending.client, { ttlMs: 60_000, pollMs: 60_000 });

    // Act
    const result = await lease.hold('op-bbbb2222', () => Promise.resolve('walked'), controller.signal);

    // Assert
    expect(resending.resent()).toBe(true);
    expect(result).toBe('walked');
    expect(await client.get('talos:op-run:op-bbbb2222')).toBeNull();
  });
});
