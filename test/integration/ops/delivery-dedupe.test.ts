import { describe, expect, it } from 'vitest';
import { createDeliveryDedupe } from '../../../src/ops/delivery-dedupe.ts';
import { resendingOnce } from '../../support/resending-redis.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();

describe('delivery dedupe on a real Redis', () => {
  it('lets the first delivery of an id through and ignores the redeliveries', async () => {
    // Arrange
    const dedupe = createDeliveryDedupe(redis.client());

    // Act
    const first = await dedupe.claim('cmd-1700000000.123456');
    const second = await dedupe.claim('cmd-1700000000.123456');
    const third = await dedupe.claim('cmd-1700000000.123456');

    // Assert
    expect([first, second, third]).toEqual([true, false, false]);
  });

  it('claims different ids independently', async () => {
    // Arrange
    const dedupe = createDeliveryDedupe(redis.client());

    // Act
    const claims = [await dedupe.claim('action-a'), await dedupe.claim('action-b')];

    // Assert
    expect(claims).toEqual([true, true]);
  });

  it('gives a delivery to exactly one of several replicas racing for it', async () => {
    // Arrange
    const replicas = [0, 1, 2, 3].map(() => createDeliveryDedupe(redis.client()));

    // Act
    const claims = await Promise.all([...replicas, ...replicas].map((d) => d.claim('cmd-replayed')));

    // Assert
    expect(claims.filter((c) => c)).toHaveLength(1);
  });

  it('forgets a delivery after its TTL, so the key space does not grow forever', async () => {
    // Arrange
    const client = redis.client();
    const dedupe = createDeliveryDedupe(client, 600);

    // Act
    await dedupe.claim('cmd-ttl');
    const ttl = await client.ttl('talos:delivery:cmd-ttl');

    // Assert
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600);
  });

  it("keeps a delivery for an hour by default, past Slack's last retry", async () => {
    // Arrange
    const client = redis.client();
    const dedupe = createDeliveryDedupe(client);

    // Act
    await dedupe.claim('cmd-default');
    const ttl = await client.ttl('talos:delivery:cmd-default');

    // Assert
    expect(ttl).toBeGreaterThan(600);
    expect(ttl).toBeLessThanOrEqual(3600);
  });

  it('keeps a claim whose reply was lost and that the client sent again, so the command still runs once', async () => {
    // Arrange: Redis restarted between setting the key and answering; ioredis sends the SET again.
    const resending = resendingOnce(redis.client(), 'set');
    const dedupe = createDeliveryDedupe(resending.client);

    // Act
    const first = await dedupe.claim('cmd-trigger-9');
    const redelivered = await dedupe.claim('cmd-trigger-9');

    // Assert
    expect(resending.resent()).toBe(true);
    expect([first, redelivered]).toEqual([true, false]);
  });
});
