import { register as globalRegistry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { execLabels, recordExecCall } from '../../../src/metrics/exec-labels.ts';
import { createMetrics, sharedRead } from '../../../src/metrics/metrics.ts';
import { readClusterHolds, recordOperationChange, waitingApprovalsByCluster } from '../../../src/ops/operation-metrics.ts';
import { Operation, type Step } from '../../../src/ops/operation.ts';
import { parsePrometheusText, sampleValue, type Sample } from '../../support/prometheus-text.ts';

async function scrape(metrics: ReturnType<typeof createMetrics>): Promise<Sample[]> {
  return parsePrometheusText(await metrics.registry.metrics());
}

/** A valid operation, its defaults filled in by the store's own schema. */
function operation(overrides: Partial<Operation> = {}): Operation {
  return Operation.parse({
    id: 'op-abc123',
    kind: 'talos-upgrade',
    cluster: 'production',
    channel: 'C0MAINTPRD',
    requestedBy: 'U0ALICE',
    createdAt: '2025-01-01T10:00:00.000Z',
    state: 'running',
    revision: 1,
    ...overrides,
  });
}

const step = (overrides: Partial<Step>): Step => ({
  id: 'node-10.0.30.11',
  kind: 'upgrade-control-plane',
  node: '10.0.30.11',
  status: 'pending',
  ...overrides,
});

describe('createMetrics', () => {
  it('keeps every instrument in its own registry, never the global one', async () => {
    const first = createMetrics();
    const second = createMetrics();

    first.operations.inc({ talos_cluster: 'production', kind: 'snapshot', result: 'completed' });

    expect(
      sampleValue(await scrape(first), 'talos_chatops_operations_total', {
        talos_cluster: 'production',
        kind: 'snapshot',
        result: 'completed',
      }),
    ).toBe(1);
    expect(
      sampleValue(await scrape(second), 'talos_chatops_operations_total', {
        talos_cluster: 'production',
        kind: 'snapshot',
        result: 'completed',
      }),
    ).toBeUndefined();
    expect(globalRegistry.getSingleMetric('talos_chatops_operations_total')).toBeUndefined();
  });

  it('reads queue depths and waiting approvals at scrape time', async () => {
    let waiting = 2;
    const metrics = createMetrics({
      queueJobCounts: () => Promise.resolve({ 'talos-ops': { waiting, active: 1 } }),
      waitingApprovals: () => Promise.resolve({ production: 1, staging: 0 }),
    });

    const first = await scrape(metrics);
    waiting = 0;
    const second = await scrape(metrics);

    expect(sampleValue(first, 'talos_chatops_queue_jobs', { queue: 'talos-ops', state: 'waiting' })).toBe(2);
    expect(sampleValue(second, 'talos_chatops_queue_jobs', { queue: 'talos-ops', state: 'waiting' })).toBe(0);
    expect(sampleValue(second, 'talos_chatops_queue_jobs', { queue: 'talos-ops', state: 'active' })).toBe(1);
    expect(sampleValue(second, 'talos_chatops_waiting_approvals', { talos_cluster: 'production' })).toBe(1);
    expect(sampleValue(second, 'talos_chatops_waiting_approvals', { talos_cluster: 'staging' })).toBe(0);
  });

  it('drops the scrape-time series instead of failing the scrape when their source fails or hangs', async () => {
    let healthy = true;
    const metrics = createMetrics({
      queueJobCounts: () =>
        healthy ? Promise.resolve({ 'talos-read': { waiting: 3 } }) : Promise.reject(new Error('Connection is closed')),
      waitingApprovals: () => (healthy ? Promise.resolve({ production: 1 }) : new Promise(() => undefined)),
      sourceTimeoutMs: 20,
    });
    expect(sampleValue(await scrape(metrics), 'talos_chatops_queue_jobs', { queue: 'talos-read', state: 'waiting' })).toBe(3);

    healthy = false;
    const samples = await scrape(metrics);

    expect(samples.filter((s) => s.name === 'talos_chatops_queue_jobs' || s.name === 'talos_chatops_waiting_approvals')).toEqual([]);
    expect(samples.some((s) => s.name === 'talos_chatops_process_cpu_user_seconds_total')).toBe(true);
  });

  it("shows each held cluster's lock time and its oldest unanswered approval request at scrape time", async () => {
    let holds = [
      {
        cluster: 'production',
        kind: 'talos-upgrade',
        state: 'awaiting-approval',
        lockedSince: 1_700_000_000,
        approvalRequestedAt: 1_700_000_600,
      },
      { cluster: 'staging', kind: 'k8s-upgrade', state: 'failed', lockedSince: 1_700_001_000 },
    ];
    const metrics = createMetrics({ clusterHolds: () => Promise.resolve(holds) });

    const first = await scrape(metrics);
    holds = [];
    const second = await scrape(metrics);

    expect(
      sampleValue(first, 'talos_chatops_cluster_locked_since_timestamp_seconds', {
        talos_cluster: 'production',
        kind: 'talos-upgrade',
        state: 'awaiting-approval',
      }),
    ).toBe(1_700_000_000);
    expect(
      sampleValue(first, 'talos_chatops_cluster_locked_since_timestamp_seconds', {
        talos_cluster: 'staging',
        kind: 'k8s-upgrade',
        state: 'failed',
      }),
    ).toBe(1_700_001_000);
    expect(first.filter((s) => s.name === 'talos_chatops_approval_requested_timestamp_seconds')).toEqual([
      { name: 'talos_chatops_approval_requested_timestamp_seconds', labels: { talos_cluster: 'production' }, value: 1_700_000_600 },
    ]);
    expect(
      second.filter((s) => s.name.startsWith('talos_chatops_cluster_locked') || s.name.startsWith('talos_chatops_approval_requested')),
    ).toEqual([]);
  });

  it('shows every readiness probe as 1 or 0, and drops them when the probes cannot be read', async () => {
    let results: Promise<Record<string, boolean>> = Promise.resolve({ redis: true, slack: false });
    const metrics = createMetrics({ readiness: () => results, sourceTimeoutMs: 20 });

    const first = await scrape(metrics);
    results = Promise.reject(new Error('probe runner failed'));
    const second = await scrape(metrics);

    expect(first.filter((s) => s.name === 'talos_chatops_ready')).toEqual([
      { name: 'talos_chatops_ready', labels: { probe: 'redis' }, value: 1 },
      { name: 'talos_chatops_ready', labels: { probe: 'slack' }, value: 0 },
    ]);
    expect(second.filter((s) => s.name === 'talos_chatops_ready')).toEqual([]);
  });

  it('shows 1 once Redis lost the epoch, and keeps the last value when Redis cannot be read', async () => {
    let intact: Promise<boolean> = Promise.resolve(true);
    const metrics = createMetrics({ redisEpochIntact: () => intact, sourceTimeoutMs: 20 });
    const value = async (): Promise<number | undefined> =>
      (await scrape(metrics)).find((s) => s.name === 'talos_chatops_redis_epoch_missing')?.value;

    const before = await value();
    intact = Promise.resolve(false);
    const lost = await value();
    intact = Promise.reject(new Error('redis away'));
    const unread = await value();

    expect({ before, lost, unread }).toEqual({ before: 0, lost: 1, unread: 1 });
  });
});

describe('sharedRead', () => {
  it('gives callers that come while a read is in flight that one read, and reads again afterwards', async () => {
    let reads = 0;
    let finish: (value: number) => void = () => undefined;
    const read = sharedRead(() => {
      reads += 1;
      return new Promise<number>((resolve) => {
        finish = resolve;
      });
    });

    const together = [read(), read(), read()];
    finish(7);
    const values = await Promise.all(together);
    const later = read();
    finish(8);

    expect(values).toEqual([7, 7, 7]);
    expect(await later).toBe(8);
    expect(reads).toBe(2);
  });

  it('lets the next caller read again after a failed read', async () => {
    let fail = true;
    const read = sharedRead(() => (fail ? Promise.reject(new Error('Connection is closed')) : Promise.resolve('ok')));

    await expect(read()).rejects.toThrow('Connection is closed');
    fail = false;

    expect(await read()).toBe('ok');
  });
});

describe('execLabels', () => {
  it.each([
    [
      '/opt/talosctl/talosctl-v1.11.6',
      ['etcd', 'snapshot', '/var/backups/talos-etcd/x.part', '--nodes', '10.0.30.11'],
      { binary: 'talosctl', subcommand: 'etcd snapshot' },
    ],
    ['talosctl', ['version', '--client'], { binary: 'talosctl', subcommand: 'version' }],
    ['talosctl', ['service', 'etcd', '--talosconfig', '/tmp/x/talosconfig'], { binary: 'talosctl', subcommand: 'service' }],
    [
      'talosctl',
      ['upgrade', '--image', 'factory.talos.dev/nocloud-installer/abc:v1.12.11', '--wait'],
      { binary: 'talosctl', subcommand: 'upgrade' },
    ],
    ['/usr/local/bin/tofu', ['output', '-raw', 'talosconfig'], { binary: 'tofu', subcommand: 'output' }],
    ['tofu', ['-chdir=/srv/infra/terraform/production', 'plan', '-detailed-exitcode'], { binary: 'tofu', subcommand: 'plan' }],
    ['tofu', ['-chdir=/srv/infra'], { binary: 'tofu', subcommand: 'none' }],
    ['talosctl', ['--talosconfig', '/tmp/x'], { binary: 'talosctl', subcommand: 'none' }],
    ['talosctl', ['10.0.30.11'], { binary: 'talosctl', subcommand: 'none' }],
  ])('labels %s %j without paths or addresses', (file, args, expected) => {
    expect(execLabels(file, args)).toEqual(expected);
  });
});

describe('recordExecCall', () => {
  it('observes every call and counts the failed ones by error code', async () => {
    const metrics = createMetrics();
    const record = recordExecCall(metrics);

    record({ file: 'talosctl-v1.11.6', args: ['etcd', 'status'], durationMs: 250, outcome: 'ok' });
    record({ file: 'talosctl-v1.11.6', args: ['etcd', 'status'], durationMs: 5000, outcome: 'exec-timeout' });

    const samples = await scrape(metrics);
    expect(sampleValue(samples, 'talos_chatops_exec_duration_seconds_count', { binary: 'talosctl', subcommand: 'etcd status' })).toBe(2);
    expect(sampleValue(samples, 'talos_chatops_exec_duration_seconds_sum', { binary: 'talosctl', subcommand: 'etcd status' })).toBeCloseTo(
      5.25,
    );
    expect(
      sampleValue(samples, 'talos_chatops_exec_failures_total', { binary: 'talosctl', subcommand: 'etcd status', code: 'exec-timeout' }),
    ).toBe(1);
    expect(
      sampleValue(samples, 'talos_chatops_exec_failures_total', { binary: 'talosctl', subcommand: 'etcd status', code: 'ok' }),
    ).toBeUndefined();
  });
});

describe('recordOperationChange', () => {
  it('counts an operation once when it ends, even when a failed one is cancelled later', async () => {
    const metrics = createMetrics();
    const record = recordOperationChange(metrics);
    const running = operation();
    const failed = operation({ state: 'failed' });

    record(running, failed);
    record(failed, operation({ state: 'cancelled' }));
    record(operation({ state: 'preflight', kind: 'snapshot' }), operation({ state: 'refused', kind: 'snapshot' }));
    record(running, operation({ state: 'awaiting-approval' }));

    const samples = await scrape(metrics);
    expect(
      sampleValue(samples, 'talos_chatops_operations_total', { talos_cluster: 'production', kind: 'talos-upgrade', result: 'failed' }),
    ).toBe(1);
    expect(
      sampleValue(samples, 'talos_chatops_operations_total', { talos_cluster: 'production', kind: 'talos-upgrade', result: 'cancelled' }),
    ).toBeUndefined();
    expect(
      sampleValue(samples, 'talos_chatops_operations_total', { talos_cluster: 'production', kind: 'snapshot', result: 'refused' }),
    ).toBe(1);
    expect(samples.filter((s) => s.name === 'talos_chatops_operations_total')).toHaveLength(2);
  });

  it('observes a step once, when it ends, with its wall time by kind and status', async () => {
    const metrics = createMetrics();
    const record = recordOperationChange(metrics);
    const started = step({ status: 'running', startedAt: '2025-01-01T10:00:00.000Z' });
    const done = step({ status: 'done', startedAt: '2025-01-01T10:00:00.000Z', endedAt: '2025-01-01T10:04:30.000Z' });

    record(operation({ steps: [started] }), operation({ steps: [done] }));
    record(operation({ steps: [done] }), operation({ steps: [done], state: 'awaiting-approval' }));

    const samples = await scrape(metrics);
    expect(sampleValue(samples, 'talos_chatops_step_duration_seconds_count', { kind: 'upgrade-control-plane', status: 'done' })).toBe(1);
    expect(sampleValue(samples, 'talos_chatops_step_duration_seconds_sum', { kind: 'upgrade-control-plane', status: 'done' })).toBe(270);
    expect(
      sampleValue(samples, 'talos_chatops_step_duration_seconds_bucket', { kind: 'upgrade-control-plane', status: 'done', le: '300' }),
    ).toBe(1);
    expect(
      sampleValue(samples, 'talos_chatops_step_duration_seconds_bucket', { kind: 'upgrade-control-plane', status: 'done', le: '120' }),
    ).toBe(0);
  });
});

describe('waitingApprovalsByCluster', () => {
  it('counts the operation holding each cluster when it waits for an approver', async () => {
    const ops = new Map([
      ['op-a', operation({ id: 'op-a', state: 'awaiting-approval' })],
      ['op-b', operation({ id: 'op-b', cluster: 'staging', state: 'running' })],
    ]);
    const holders: Record<string, string> = { production: 'op-a', staging: 'op-b' };

    const counts = await waitingApprovalsByCluster(
      ['production', 'staging', 'lab'],
      (cluster) => Promise.resolve(holders[cluster]),
      (id) => Promise.resolve(ops.get(id)),
    );

    expect(counts).toEqual({ production: 1, staging: 0, lab: 0 });
  });
});

describe('readClusterHolds', () => {
  it("dates each lock from its holder's start, or its request when it has not started, and finds its oldest pending approval", async () => {
    const approval = (requestedAt: string, state: 'pending' | 'approved' | 'expired') => ({
      step: 's',
      nonce: 'n',
      messageTs: '1.2',
      requestedAt,
      expiresAt: requestedAt,
      state,
    });
    const ops = new Map([
      [
        'op-a',
        operation({
          id: 'op-a',
          state: 'awaiting-approval',
          startedAt: '2025-01-01T10:05:00.000Z',
          approvals: [
            approval('2025-01-01T10:20:00.000Z', 'approved'),
            approval('2025-01-01T10:40:00.000Z', 'pending'),
            approval('2025-01-01T10:30:00.000Z', 'pending'),
          ],
        }),
      ],
      [
        'op-b',
        operation({
          id: 'op-b',
          kind: 'node-rollback',
          cluster: 'staging',
          state: 'paused',
          approvals: [approval('2025-01-01T10:10:00.000Z', 'expired')],
        }),
      ],
    ]);
    const holders: Record<string, string> = { production: 'op-a', staging: 'op-b', lab: 'op-gone' };

    const holds = await readClusterHolds(
      ['production', 'staging', 'lab', 'free'],
      (cluster) => Promise.resolve(holders[cluster]),
      (id) => Promise.resolve(ops.get(id)),
    );

    expect(holds).toEqual([
      {
        cluster: 'production',
        kind: 'talos-upgrade',
        state: 'awaiting-approval',
        lockedSince: Date.parse('2025-01-01T10:05:00.000Z') / 1000,
        approvalRequestedAt: Date.parse('2025-01-01T10:30:00.000Z') / 1000,
      },
      { cluster: 'staging', kind: 'node-rollback', state: 'paused', lockedSince: Date.parse('2025-01-01T10:00:00.000Z') / 1000 },
    ]);
  });
});
