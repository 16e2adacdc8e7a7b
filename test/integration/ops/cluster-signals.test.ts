import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { createClusterSignals, gateVerdictName, readClusterSignals } from '../../../src/ops/cluster-signals.ts';
import { longestCronGapSeconds } from '../../../src/rules/schedule-interval.ts';
import { parsePrometheusText, sampleValue } from '../../support/prometheus-text.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

// The cluster signals as the composition root wires them: gates kept in a real Redis, snapshots read from a real directory.

const redis = useRedisFixture();

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'talos-chatops-signals-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const at = (iso: string): Date => new Date(iso);
const seconds = (iso: string): number => Date.parse(iso) / 1000;

describe('cluster signals', () => {
  it("keeps a verdict's start across equal verdicts, restarts it on a change, and shows the same on every replica", async () => {
    const replicaA = createClusterSignals(redis.client());
    const replicaB = createClusterSignals(redis.client());

    await replicaA.gateFinished('production', 'failed', at('2026-11-30T01:00:00Z'), ['v1.11.5', 'v1.11.6', 'v1.11.5']);
    await replicaB.gateFinished('production', 'failed', at('2026-11-30T01:15:00Z'));
    const stillFailing = await replicaA.read('production');
    await replicaB.gateFinished('production', 'warning', at('2026-11-30T01:30:00Z'), ['v1.11.6']);

    expect(stillFailing).toEqual({
      gate: { verdict: 'failed', at: seconds('2026-11-30T01:15:00Z'), since: seconds('2026-11-30T01:00:00Z') },
      // The second gate read no version: the versions of the first stand.
      talosVersions: ['v1.11.5', 'v1.11.6'],
    });
    expect(await replicaA.read('production')).toEqual({
      gate: { verdict: 'warning', at: seconds('2026-11-30T01:30:00Z'), since: seconds('2026-11-30T01:30:00Z') },
      talosVersions: ['v1.11.6'],
    });
    expect(await replicaA.read('staging')).toEqual({});
  });

  it('names a gate passed, warning or failed from its report', () => {
    const check = (status: 'passed' | 'warning' | 'failed') => ({ status }) as never;
    expect(gateVerdictName({ passed: true, checks: [check('passed')] })).toBe('passed');
    expect(gateVerdictName({ passed: true, checks: [check('passed'), check('warning')] })).toBe('warning');
    expect(gateVerdictName({ passed: false, checks: [check('warning'), check('failed')] })).toBe('failed');
  });

  it('shows the newest verified snapshot of each cluster, its schedule interval, its gate and its versions at scrape time', async () => {
    // Verified: the .sha256 beside it. The newer production file has none yet (still being checked), staging's is another cluster's.
    for (const file of [
      'production-20261130T010000Z-rev100.db',
      'production-20261130T010000Z-rev100.db.sha256',
      'production-20261130T020000Z-rev200.db',
      'production-20261129T230000Z-rev90.db',
      'production-20261129T230000Z-rev90.db.sha256',
      'staging-20261130T030000Z-rev5.db',
      'staging-20261130T030000Z-rev5.db.sha256',
      'notes.txt',
    ])
      await writeFile(join(dir, file), '');
    const signals = createClusterSignals(redis.client());
    await signals.gateFinished('production', 'failed', at('2026-11-30T01:05:00Z'), ['v1.11.5', 'v1.11.6']);
    const clusters = [
      { name: 'production', snapshotDir: dir, schedules: { snapshot: { cron: '0 * * * *', timeZone: 'UTC', keepLast: 24 } } },
      { name: 'staging', snapshotDir: join(dir, 'missing'), schedules: undefined },
    ];
    const metrics = createMetrics({
      clusterSignals: () => readClusterSignals(clusters, signals, at('2026-11-30T02:10:00Z')),
      clusterHolds: () =>
        Promise.resolve([
          { cluster: 'production', kind: 'talos-upgrade', state: 'failed', lockedSince: 1 },
          { cluster: 'staging', kind: 'k8s-upgrade', state: 'running', lockedSince: 2 },
        ]),
    });

    const samples = parsePrometheusText(await metrics.registry.metrics());

    const production = { talos_cluster: 'production' };
    expect(sampleValue(samples, 'talos_chatops_snapshot_last_verified_timestamp_seconds', production)).toBe(
      seconds('2026-11-30T01:00:00Z'),
    );
    expect(sampleValue(samples, 'talos_chatops_snapshot_schedule_interval_seconds', production)).toBe(3600);
    expect(sampleValue(samples, 'talos_chatops_gate_last_timestamp_seconds', { ...production, verdict: 'failed' })).toBe(
      seconds('2026-11-30T01:05:00Z'),
    );
    expect(sampleValue(samples, 'talos_chatops_gate_verdict_since_timestamp_seconds', { ...production, verdict: 'failed' })).toBe(
      seconds('2026-11-30T01:05:00Z'),
    );
    expect(sampleValue(samples, 'talos_chatops_talos_versions', production)).toBe(2);
    expect(samples.filter((s) => s.name === 'talos_chatops_cluster_stopped')).toEqual([
      { name: 'talos_chatops_cluster_stopped', labels: { ...production, kind: 'talos-upgrade', state: 'failed' }, value: 1 },
    ]);
    // Staging: no readable snapshot directory, no schedule, no gate yet, a running holder: no signal series rather than made-up values.
    expect(
      samples.filter((s) => s.labels.talos_cluster === 'staging' && s.name !== 'talos_chatops_cluster_locked_since_timestamp_seconds'),
    ).toEqual([]);
  });
});

describe('longestCronGapSeconds', () => {
  it("is a schedule's longest gap: the weekend for a weekday-only one", () => {
    const monday = at('2026-11-30T00:00:00Z');
    expect(longestCronGapSeconds('0 * * * *', 'UTC', monday)).toBe(3600);
    expect(longestCronGapSeconds('0 2 * * 1-5', 'UTC', monday)).toBe(3 * 86_400);
    expect(longestCronGapSeconds('not a pattern', 'UTC', monday)).toBeUndefined();
  });
});

describe('talos_chatops_build_info', () => {
  it('is 1 with the version, the Node.js version and the commit when one is given', async () => {
    const withCommit = parsePrometheusText(
      await createMetrics({ build: { version: '1.2.3', nodeVersion: '24.18.0', commit: 'abc1234' } }).registry.metrics(),
    );
    const without = parsePrometheusText(await createMetrics({ build: { version: '1.2.3', nodeVersion: '24.18.0' } }).registry.metrics());

    expect(withCommit.filter((s) => s.name === 'talos_chatops_build_info')).toEqual([
      { name: 'talos_chatops_build_info', labels: { version: '1.2.3', node_version: '24.18.0', commit: 'abc1234' }, value: 1 },
    ]);
    expect(without.filter((s) => s.name === 'talos_chatops_build_info')).toEqual([
      { name: 'talos_chatops_build_info', labels: { version: '1.2.3', node_version: '24.18.0' }, value: 1 },
    ]);
  });
});
