import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createRunLease } from '../../../src/ops/run-lease.ts';
import { resendingOnce } from '../../support/resending-redis.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();

describe('run lease on a real Redis', () => {
  it('lets a second run of an operation start only after the first returned, across replicas', async () => {
    // Arrange: the first run holds the lease until the test lets it end, after the second replica asked for it.
    const replicaA = createRunLease(redis.client(), { ttlMs: 1000, pollMs: 20 });
    const askingB = redis.client();
    const replicaB = createRunLease(askingB, { ttlMs: 1000, pollMs: 20 });
    const log: string[] = [];
    const firstBegan = deferred();
    const firstMayEnd = deferred();

    // Act
    const first = replicaA.hold('op-aaaa1111', async () => {
      log.push('first begins');
      firstBegan.resolve();
      await firstMayEnd.promise;
      log.push('first ends');
    });
    await firstBegan.promise;
    // Two refused takes: the second replica has looked at the held lease and is waiting.
    const waiting = refusedTakes(askingB, 'op-aaaa1111', 2);
    const second = replicaB.hold('op-aaaa1111', async () => {
      log.push('second begins');
      log.push('second ends');
    });
    await waiting;
    firstMayEnd.resolve();
    await Promise.all([first, second]);

    // Assert
    expect(log).toEqual(['first begins', 'first ends', 'second begins', 'second ends']);
  });

  it('does not hold up another operation', async () => {
    // Arrange
    const lease = createRunLease(redis.client(), { ttlMs: 1000, pollMs: 20 });
    const log: string[] = [];
    const otherRan = deferred();

    // Act: the first run ends only once the other operation's run has run, so a lease shared between them never ends.
    await Promise.all([
      lease.hold('op-aaaa1111', async () => {
        await otherRan.promise;
        log.push('a');
      }),
      lease.hold('op-bbbb2222', async () => {
        log.push('b');
        otherRan.resolve();
      }),
    ]);

    // Assert
    expect(log).toEqual(['b', 'a']);
  });

  it('keeps the lease past its time-to-live while the run goes on', async () => {
    // Arrange
    const holding = redis.client();
    const lease = createRunLease(holding, { ttlMs: 600, pollMs: 20 });
    let secondStartedEarly = false;
    const firstBegan = deferred();

    // Act: the first run goes on until its lease was renewed four times, past its time-to-live; the second asks meanwhile.
    let firstDone = false;
    const renewed = answered(holding, 'eval', (args, answer) => String(args[0]).includes('PEXPIRE') && answer === 1, 4);
    const first = lease.hold('op-aaaa1111', async () => {
      firstBegan.resolve();
      await renewed;
      firstDone = true;
    });
    await firstBegan.promise;
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
    // Whatever the machine's load: a refused take means the lease met the dead holder's key, and
    // a take succeeds (SET NX) only once that key is gone.
    let refused = false;
    void refusedTakes(client, 'op-aaaa1111', 1).then(() => (refused = true));

    // Act
    const ran = await lease.hold('op-aaaa1111', async () => ({
      refusedFirst: refused,
      holder: await client.get('talos:op-run:op-aaaa1111'),
    }));

    // Assert
    expect(ran.refusedFirst).toBe(true);
    expect(ran.holder).not.toBe('dead-replica');
    expect(ran.holder).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('tells the run when another run took the lease, so it stops', async () => {
    // Arrange
    const client = redis.client();
    const lease = createRunLease(client, { ttlMs: 150, pollMs: 20 });

    // Act: the key is taken over under the holder, as after a Redis restart past its deadline.
    const reason = await lease.hold('op-aaaa1111', async (signal) => {
      await client.set('talos:op-run:op-aaaa1111', 'another-run', 'PX', 5000);
      // The next renewal finds the other run's token: the run hears of it through its signal.
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      return (signal.reason as Error).message;
    });

    // Assert
    expect(reason).toBe('the run lease of op-aaaa1111 passed to another run');
    expect(await client.get('talos:op-run:op-aaaa1111')).toBe('another-run');
  });

  it('holds at once when its take landed but the reply was lost and the client sent it again', async () => {
    // Arrange: the second SET (ioredis resending after Redis restarted) finds our own token there.
    const client = redis.client();
    const controller = new AbortController();
    // Were the lease to wait for itself, its first pause rejects with this error at once.
    const resending = resendingOnce(client, 'set', () => controller.abort(new Error('waited for its own lease')));
    const lease = createRunLease(resending.client, { ttlMs: 60_000, pollMs: 60_000 });

    // Act
    const result = await lease.hold('op-bbbb2222', () => Promise.resolve('walked'), controller.signal);

    // Assert
    expect(resending.resent()).toBe(true);
    expect(result).toBe('walked');
    expect(await client.get('talos:op-run:op-bbbb2222')).toBeNull();
  });
});

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Resolves once `count` takes of the operation's lease through `client` were refused (the key held by another run). */
function refusedTakes(client: Redis, opId: string, count: number): Promise<void> {
  return answered(client, 'set', (args, answer) => args[0] === `talos:op-run:${opId}` && answer === null, count);
}

/** Resolves once `count` calls of `method` through `client` were answered as `counts` looks for; counting starts now. */
function answered(
  client: Redis,
  method: 'set' | 'eval',
  counts: (args: unknown[], answer: unknown) => boolean,
  count: number,
): Promise<void> {
  let seen = 0;
  const reached = deferred();
  const original = (client[method] as (...args: unknown[]) => Promise<unknown>).bind(client);
  (client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[method] = async (...args: unknown[]) => {
    const answer = await original(...args);
    if (counts(args, answer) && ++seen >= count) reached.resolve();
    return answer;
  };
  return reached.promise;
}
