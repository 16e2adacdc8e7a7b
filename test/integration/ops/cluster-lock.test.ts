import { describe, expect, it } from 'vitest';
import { createClusterLock } from '../../../src/ops/cluster-lock.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();

describe('cluster lock on a real Redis', () => {
  it('is free at first and held by the first operation that takes it', async () => {
    // Arrange
    const lock = createClusterLock(redis.client());

    // Act
    const before = await lock.holder('production');
    const acquired = await lock.acquire('production', 'op-aaaa1111');

    // Assert
    expect(before).toBeUndefined();
    expect(acquired).toEqual({ ok: true });
    expect(await lock.holder('production')).toBe('op-aaaa1111');
  });

  it('lets its holder take it again, as a resumed job does', async () => {
    // Arrange
    const lock = createClusterLock(redis.client());
    await lock.acquire('production', 'op-aaaa1111');

    // Act
    const again = await lock.acquire('production', 'op-aaaa1111');

    // Assert
    expect(again).toEqual({ ok: true });
  });

  it('refuses another operation, naming the holder, from any replica', async () => {
    // Arrange
    await createClusterLock(redis.client()).acquire('production', 'op-aaaa1111');
    const otherReplica = createClusterLock(redis.client());

    // Act
    const conflict = await otherReplica.acquire('production', 'op-bbbb2222');

    // Assert
    expect(conflict).toEqual({ ok: false, heldBy: 'op-aaaa1111' });
  });

  it('locks each cluster on its own', async () => {
    // Arrange
    const lock = createClusterLock(redis.client());
    await lock.acquire('production', 'op-aaaa1111');

    // Act
    const staging = await lock.acquire('staging', 'op-bbbb2222');

    // Assert
    expect(staging).toEqual({ ok: true });
  });

  it('is released only by its holder', async () => {
    // Arrange
    const lock = createClusterLock(redis.client());
    await lock.acquire('production', 'op-aaaa1111');

    // Act
    const byOther = await lock.release('production', 'op-bbbb2222');
    const heldAfterOther = await lock.holder('production');
    const byHolder = await lock.release('production', 'op-aaaa1111');
    const heldAfterHolder = await lock.holder('production');

    // Assert
    expect(byOther).toBe(false);
    expect(heldAfterOther).toBe('op-aaaa1111');
    expect(byHolder).toBe(true);
    expect(heldAfterHolder).toBeUndefined();
    expect(await lock.acquire('production', 'op-bbbb2222')).toEqual({ ok: true });
  });

  it('reports releasing a free lock as nothing released', async () => {
    // Arrange
    const lock = createClusterLock(redis.client());

    // Act
    const released = await lock.release('production', 'op-aaaa1111');

    // Assert
    expect(released).toBe(false);
  });

  it('has no expiry, so a failed half-way operation keeps the cluster', async () => {
    // Arrange
    const client = redis.client();
    const lock = createClusterLock(client);

    // Act
    await lock.acquire('production', 'op-aaaa1111');

    // Assert
    expect(await client.ttl('talos:lock:production')).toBe(-1);
  });

  it('goes to exactly one of many operations racing for it', async () => {
    // Arrange
    const locks = [0, 1, 2].map(() => createClusterLock(redis.client()));
    const ops = Array.from({ length: 12 }, (_, i) => `op-race${String(i).padStart(4, '0')}`);

    // Act
    const results = await Promise.all(ops.map((op, i) => locks[i % locks.length]!.acquire('production', op)));

    // Assert
    const winners = ops.filter((_, i) => results[i]!.ok);
    expect(winners).toHaveLength(1);
    expect(await locks[0]!.holder('production')).toBe(winners[0]);
    expect(results.filter((r) => !r.ok)).toEqual(Array.from({ length: 11 }, () => ({ ok: false, heldBy: winners[0] })));
  });

  it('hands the lock from its holder to another operation, and never takes a lock another holds', async () => {
    // Arrange
    const lock = createClusterLock(redis.client());
    await lock.acquire('production', 'op-upgrade01');

    // Act
    const stranger = await lock.transfer('production', 'op-other0001', 'op-rollbk01');
    const handed = await lock.transfer('production', 'op-upgrade01', 'op-rollbk01');
    const again = await lock.transfer('production', 'op-upgrade01', 'op-rollbk01');
    const releasedByOld = await lock.release('production', 'op-upgrade01');

    // Assert
    expect(stranger).toBe(false);
    expect(handed).toBe(true);
    expect(again).toBe(true);
    expect(releasedByOld).toBe(false);
    expect(await lock.holder('production')).toBe('op-rollbk01');
  });

  it('does not hand over a free lock', async () => {
    // Arrange
    const lock = createClusterLock(redis.client());

    // Act
    const handed = await lock.transfer('production', 'op-upgrade01', 'op-rollbk01');

    // Assert
    expect(handed).toBe(false);
    expect(await lock.holder('production')).toBeUndefined();
  });
});
