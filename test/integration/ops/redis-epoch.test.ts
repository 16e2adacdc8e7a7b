import { describe, expect, it } from 'vitest';
import { EPOCH_KEY, establishEpoch, SEEN_KEY } from '../../../src/ops/redis-epoch.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

// Redis brought back from an older copy keeps the epoch of that copy: the seen time, which each check moves
// forward and each process remembers, is what goes back.

const redis = useRedisFixture();
const MIN = 60_000;

/** A process's epoch on the fixture's Redis, reading `clock`. */
function epochAt(clock: { now: Date }, lost: string[] = [], reseed = false) {
  return establishEpoch(redis.client(), { reseed, now: () => clock.now, onLost: (reason) => lost.push(reason) });
}

/** Every key of the bot as it is now, to put back later as a restore from a backup would. */
async function backup(): Promise<[string, Buffer][]> {
  const client = redis.client();
  const keys = await client.keys('talos:*');
  return Promise.all(keys.map(async (k): Promise<[string, Buffer]> => [k, (await client.dumpBuffer(k))!]));
}

async function restore(copy: [string, Buffer][]): Promise<void> {
  const client = redis.client();
  await client.flushall();
  for (const [key, value] of copy) await client.restore(key, 0, value, 'REPLACE');
}

describe('the Redis epoch', () => {
  it('is lost once Redis comes back from a copy older than the last check, though the epoch is the same', async () => {
    // Arrange: a check at 10:00 is in the backup; the process checks again at 10:10.
    const clock = { now: new Date('2026-12-01T10:00:00Z') };
    const lost: string[] = [];
    const epoch = await epochAt(clock, lost);
    const id = epoch.expected();
    expect(await epoch.check()).toBe(true);
    const copy = await backup();
    clock.now = new Date(clock.now.getTime() + 10 * MIN);
    expect(await epoch.check()).toBe(true);

    // Act: the 10:00 copy is restored, and the next poll comes.
    await restore(copy);
    clock.now = new Date(clock.now.getTime() + MIN / 4);
    const intact = await epoch.check();

    // Assert
    expect(intact).toBe(false);
    // The copy carries the same epoch: only the seen time tells.
    expect(await redis.client().get(EPOCH_KEY)).toBe(id);
    expect(lost).toEqual([
      'Redis lost the data the bot keeps: its operations, cluster locks and approvals may be missing or out of date, so the bot refuses to act; it was brought back from an older copy: the last time the bot saw it whole went back from 2026-12-01T10:10:00.000Z to 2026-12-01T10:00:00.000Z',
    ]);
    expect(epoch.expected()).toBe('-');
  });

  it('stays whole when the seen time goes back less than the tolerance (the second a crash with AOF may lose)', async () => {
    // Arrange
    const clock = { now: new Date('2026-12-01T10:00:00Z') };
    const epoch = await epochAt(clock);
    expect(await epoch.check()).toBe(true);
    await redis.client().set(SEEN_KEY, String(clock.now.getTime() - 1000));

    // Act
    clock.now = new Date(clock.now.getTime() + 1000);
    const intact = await epoch.check();

    // Assert
    expect(intact).toBe(true);
  });

  it('does not go back with a replica whose clock is behind: the seen time only moves forward', async () => {
    // Arrange: one replica's clock is five minutes behind the other's.
    const ahead = { now: new Date('2026-12-01T10:05:00Z') };
    const behind = { now: new Date('2026-12-01T10:00:00Z') };
    const first = await epochAt(ahead);
    const second = await epochAt(behind);

    // Act
    const checks = [await first.check(), await second.check(), await first.check(), await second.check()];

    // Assert
    expect(checks).toEqual([true, true, true, true]);
    expect(Number(await redis.client().get(SEEN_KEY))).toBe(ahead.now.getTime());
  });

  it('is lost at start on a Redis whose only trace of the bot is its seen time, unless re-seeded', async () => {
    // Arrange: a replica polled after the flush, before this one started.
    await redis.client().set(SEEN_KEY, '1796400000000');
    const clock = { now: new Date('2026-12-01T10:00:00Z') };
    const lost: string[] = [];

    // Act
    const refused = await epochAt(clock, lost);
    const reseeded = await epochAt(clock, [], true);

    // Assert
    expect(await refused.check()).toBe(false);
    expect(lost[0]).toContain('it found operations or locks but no epoch at start');
    expect(await reseeded.check()).toBe(true);
  });
});
