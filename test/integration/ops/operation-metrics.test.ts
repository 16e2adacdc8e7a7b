import { describe, expect, it } from 'vitest';
import { createMetrics, sharedRead, type Metrics } from '../../../src/metrics/metrics.ts';
import { readClusterHolds, waitingApprovalCounts } from '../../../src/ops/operation-metrics.ts';
import { createClusterLock, type ClusterLock } from '../../../src/ops/cluster-lock.ts';
import type { Approval, Operation } from '../../../src/ops/operation.ts';
import { createOperationStore, type OperationStore } from '../../../src/ops/operation-store.ts';
import { parsePrometheusText, sampleValue, type Sample } from '../../support/prometheus-text.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';
import { anOperation } from '../../support/builders.ts';

// The lock and approval gauges as the composition root wires them: read from a real Redis at scrape time.

const CLUSTERS = ['production', 'staging'];

const redis = useRedisFixture();

function operation(overrides: Partial<Operation>): Operation {
  return anOperation({
    state: 'running',
    ...overrides,
  });
}

const pending = (requestedAt: string): Approval => ({
  step: 'cp-1',
  nonce: 'n1',
  messageTs: '1700000000.000100',
  requestedAt,
  expiresAt: '2026-11-29T23:30:00.000Z',
  state: 'pending',
});

/** Counts the Redis commands of one connection, to show what a scrape costs. */
async function commandsDuring(work: () => Promise<unknown>): Promise<number> {
  const admin = redis.client();
  const calls = async (): Promise<number> => {
    const info = await admin.info('stats');
    return Number(/total_commands_processed:(\d+)/.exec(info)?.[1]);
  };
  const before = await calls();
  await work();
  // The INFO that reads the count is itself a command.
  return (await calls()) - before - 1;
}

function wire(store: OperationStore, lock: ClusterLock): Metrics {
  const holds = sharedRead(() =>
    readClusterHolds(
      CLUSTERS,
      (cluster) => lock.holder(cluster),
      (id) => store.get(id),
    ),
  );
  return createMetrics({ waitingApprovals: async () => waitingApprovalCounts(CLUSTERS, await holds()), clusterHolds: holds });
}

async function scrape(metrics: Metrics): Promise<Sample[]> {
  return parsePrometheusText(await metrics.registry.metrics());
}

describe('lock and approval gauges on a real Redis', () => {
  it('shows the holder of a locked cluster, its start and its oldest pending approval, and nothing for a free cluster', async () => {
    // Arrange
    const connection = redis.client();
    const store = createOperationStore(connection);
    const lock = createClusterLock(connection);
    await store.create(
      operation({
        state: 'awaiting-approval',
        startedAt: '2026-11-29T22:05:00.000Z',
        approvals: [pending('2026-11-29T22:30:00.000Z')],
      }),
    );
    await lock.acquire('production', 'op-1a2b3c4d5e');

    // Act
    const samples = await scrape(wire(store, lock));

    // Assert
    expect(
      sampleValue(samples, 'talos_chatops_cluster_locked_since_timestamp_seconds', {
        talos_cluster: 'production',
        kind: 'talos-upgrade',
        state: 'awaiting-approval',
      }),
    ).toBe(Date.parse('2026-11-29T22:05:00.000Z') / 1000);
    expect(sampleValue(samples, 'talos_chatops_approval_requested_timestamp_seconds', { talos_cluster: 'production' })).toBe(
      Date.parse('2026-11-29T22:30:00.000Z') / 1000,
    );
    expect(sampleValue(samples, 'talos_chatops_waiting_approvals', { talos_cluster: 'production' })).toBe(1);
    expect(sampleValue(samples, 'talos_chatops_waiting_approvals', { talos_cluster: 'staging' })).toBe(0);
    expect(samples.filter((s) => s.labels.talos_cluster === 'staging' && s.name !== 'talos_chatops_waiting_approvals')).toEqual([]);
  });

  it("follows the holder's state from one scrape to the next, and drops the series once the lock is released", async () => {
    // Arrange
    const connection = redis.client();
    const store = createOperationStore(connection);
    const lock = createClusterLock(connection);
    const metrics = wire(store, lock);
    await store.create(
      operation({ kind: 'k8s-upgrade', cluster: 'staging', channel: 'C0MAINTSTG', startedAt: '2026-11-29T22:01:00.000Z' }),
    );
    await lock.acquire('staging', 'op-1a2b3c4d5e');

    // Act
    const running = await scrape(metrics);
    await store.update('op-1a2b3c4d5e', (op) => ({ ...op, state: 'failed' }));
    const failed = await scrape(metrics);
    await lock.release('staging', 'op-1a2b3c4d5e');
    const released = await scrape(metrics);

    // Assert
    const lockSeries = (samples: Sample[]): Sample[] =>
      samples.filter((s) => s.name === 'talos_chatops_cluster_locked_since_timestamp_seconds');
    const since = Date.parse('2026-11-29T22:01:00.000Z') / 1000;
    expect(lockSeries(running)).toEqual([
      {
        name: 'talos_chatops_cluster_locked_since_timestamp_seconds',
        labels: { talos_cluster: 'staging', kind: 'k8s-upgrade', state: 'running' },
        value: since,
      },
    ]);
    expect(lockSeries(failed)).toEqual([
      {
        name: 'talos_chatops_cluster_locked_since_timestamp_seconds',
        labels: { talos_cluster: 'staging', kind: 'k8s-upgrade', state: 'failed' },
        value: since,
      },
    ]);
    expect(lockSeries(released)).toEqual([]);
  });

  it('reads the locks once per scrape for all three gauges', async () => {
    // Arrange
    const connection = redis.client();
    const store = createOperationStore(connection);
    const lock = createClusterLock(connection);
    await store.create(operation({ state: 'awaiting-approval', approvals: [pending('2026-11-29T22:30:00.000Z')] }));
    await lock.acquire('production', 'op-1a2b3c4d5e');
    const metrics = wire(store, lock);

    // Act
    const oneRead = await commandsDuring(() =>
      readClusterHolds(
        CLUSTERS,
        (cluster) => lock.holder(cluster),
        (id) => store.get(id),
      ),
    );
    const oneScrape = await commandsDuring(() => metrics.registry.metrics());

    // Assert
    expect(oneRead).toBeGreaterThan(0);
    expect(oneScrape).toBe(oneRead);
  });
});
