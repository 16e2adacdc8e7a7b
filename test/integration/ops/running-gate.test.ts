import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createRunningGates } from '../../../src/ops/running-gate.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();

describe('the running health gate of a cluster, on a real Redis', () => {
  it('lets the first gate run and shows it, with its message and link, to a second', async () => {
    // Arrange
    const gates = createRunningGates(redis.client(), { ttlMs: 60_000 });
    await gates.claim('production', { job: 'health-1', requestedBy: 'U0ALICE' });

    // Act
    await gates.note('production', 'health-1', { rootTs: '1700000000.000100' });
    await gates.note('production', 'health-1', { link: 'https://talos-test.slack.com/archives/C0MAINTPRD/p1700000000000100' });
    const second = await gates.claim('production', { job: 'health-2', requestedBy: 'U0BOB' });
    const other = await gates.claim('staging', { job: 'health-3', requestedBy: 'U0BOB' });

    // Assert
    expect(second).toEqual({
      ok: false,
      running: {
        job: 'health-1',
        requestedBy: 'U0ALICE',
        rootTs: '1700000000.000100',
        link: 'https://talos-test.slack.com/archives/C0MAINTPRD/p1700000000000100',
      },
    });
    expect(other).toEqual({ ok: true });
  });

  it('gives a job run again its own entry back, and is free once its gate released it', async () => {
    // Arrange
    const gates = createRunningGates(redis.client(), { ttlMs: 60_000 });
    await gates.claim('production', { job: 'health-1', requestedBy: 'U0ALICE' });

    // Act
    const again = await gates.claim('production', { job: 'health-1', requestedBy: 'U0ALICE' });
    await gates.release('production', 'health-2');
    const afterForeignRelease = await gates.get('production');
    await gates.release('production', 'health-1');

    // Assert
    expect(again).toEqual({ ok: true });
    expect(afterForeignRelease?.job).toBe('health-1');
    expect(await gates.get('production')).toBeUndefined();
    expect(await gates.claim('production', { job: 'health-2', requestedBy: 'U0BOB' })).toEqual({ ok: true });
  });

  it('ignores notes of a gate that is not the running one, and expires an entry whose replica died', async () => {
    // Arrange
    const gates = createRunningGates(redis.client(), { ttlMs: 300 });
    await gates.claim('production', { job: 'health-1', requestedBy: 'U0ALICE' });

    // Act
    await gates.note('production', 'health-2', { rootTs: '1700000000.000999' });
    const noted = await gates.get('production');
    await sleep(500);

    // Assert
    expect(noted).toEqual({ job: 'health-1', requestedBy: 'U0ALICE' });
    expect(await gates.get('production')).toBeUndefined();
  });
});
