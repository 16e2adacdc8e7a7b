import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCancelledJob } from '../../../../jobs/engine/cancelled.ts';
import { createPreflightJob } from '../../../../jobs/engine/preflight.ts';
import { createRetiredSnapshotJob, RETIRED_SNAPSHOT_REASON } from '../../../../jobs/engine/retired-snapshot-job.ts';
import { createRunJob } from '../../../../jobs/engine/walk.ts';
import { PLAYBOOKS } from '../../../../jobs/playbooks/index.ts';
import type { Operation } from '../../../../src/ops/operation.ts';
import { productionShape } from '../../../sim/shapes.ts';
import { engineFixture, type EngineFixture } from '../../../support/engine-fixture.ts';
import { fakeCluster, inventoryOf, type FakeCluster } from '../../../support/fake-cluster.ts';
import { useRedisFixture } from '../../../support/redis-fixture.ts';

const shape = productionShape({
  talosVersion: 'v1.11.5',
  longhorn: false,
  longhornExtensions: undefined,
  nodes: [
    { hostname: 'talos-prd-cp-1', address: '10.0.30.11', role: 'controlplane', host: 'pve1' },
    { hostname: 'talos-prd-cp-2', address: '10.0.30.12', role: 'controlplane', host: 'pve2' },
    { hostname: 'talos-prd-cp-3', address: '10.0.30.13', role: 'controlplane', host: 'pve3' },
  ],
});
const TERRAFORM_DIR = '/srv/infra/terraform/production';

const redis = useRedisFixture();
let f: EngineFixture;
let cluster: FakeCluster;
let dir: string;

/** The engine against the fake production cluster, its snapshots going to `snapshotDir`. */
function setUp(snapshotDir: string): void {
  cluster = fakeCluster({ shape, terraformDir: TERRAFORM_DIR });
  f = engineFixture(redis, { inventory: inventoryOf(shape, { terraformDir: TERRAFORM_DIR, snapshotDir }), cluster });
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'talos-snapshot-'));
  setUp(join(dir, 'snapshots'));
});

afterEach(async () => {
  cluster.close();
  await rm(dir, { recursive: true, force: true });
});

const job = (opId: string): Job => ({ id: `job-${opId}`, data: { opId }, attemptsStarted: 1 }) as unknown as Job;
const stored = async (id: string): Promise<Operation> => (await f.deps.store.get(id))!;
const holder = (): Promise<string | undefined> => f.deps.lock.holder('production');
const events = (op: Operation): string[] => op.audit.map((e) => e.event);
/** The root message as the channel shows it last: its text. */
const rootText = (op: Operation): string | undefined =>
  f.chat.edits.filter((e) => e.ts === op.rootTs).at(-1)?.message.text ?? f.chat.posts.find((p) => p.ts === op.rootTs)?.message.text;

/** `/talos snapshot` as the command stores it, then its preflight and run as the worker takes them. */
async function snapshot(): Promise<Operation> {
  const op = await f.operation({ kind: 'snapshot', state: 'preflight', target: {}, startedBy: undefined });
  await createPreflightJob(f.deps, PLAYBOOKS)(job(op.id));
  expect(f.queue.added.filter((j) => j.name === 'operation-run').map((j) => (j.data as { opId: string }).opId)).toContain(op.id);
  await createRunJob(f.deps, PLAYBOOKS)(job(op.id));
  return stored(op.id);
}

describe('the snapshot playbook', () => {
  it('takes a verified snapshot off-cluster, records it with its sha256, and never takes the lock', async () => {
    // Act
    const op = await snapshot();

    // Assert
    expect(op.state).toBe('completed');
    expect(op.startedBy).toBe('U0ALICE');
    expect(op.steps.map((s) => [s.id, s.status])).toEqual([['snapshot', 'done']]);
    expect(op.snapshot?.id).toMatch(/^production-\d{8}T\d{6}Z-rev\d+$/);
    expect(op.validation).toBe(`sha256 ${op.snapshot!.sha256}`);
    expect(existsSync(op.snapshot!.path)).toBe(true);
    expect(events(op)).toEqual([
      'preflight passed, plan posted',
      'step started: etcd snapshot, copied off-cluster',
      'etcd snapshot verified',
      'completed',
    ]);
    expect(op.audit.find((e) => e.event === 'etcd snapshot verified')?.detail).toContain(
      `${op.snapshot!.id}: ${op.snapshot!.bytes} bytes, sha256 ${op.snapshot!.sha256.slice(0, 12)}…`,
    );
    expect(rootText(op)).toBe(`✅ etcd snapshot of production: \`${op.snapshot!.id}\` (${op.id})`);
    expect(await holder()).toBeUndefined();
    expect(f.queue.added.map((j) => j.opts.jobId)).toContain(`${op.id}-ended-completed`);
  });

  it('ends failed with the reason when the snapshot cannot be written, leaving the cluster unlocked', async () => {
    // Arrange: the snapshot directory's parent is a file, so it cannot be created.
    cluster.close();
    await writeFile(join(dir, 'a-file'), 'not a directory');
    setUp(join(dir, 'a-file', 'snapshots'));

    // Act
    const op = await snapshot();

    // Assert
    expect(op.state).toBe('failed');
    expect(op.reason).toMatch(/ENOTDIR|not a directory/);
    expect(op.retry).toBeUndefined();
    expect(op.snapshot).toBeUndefined();
    expect(events(op)).toEqual([
      'preflight passed, plan posted',
      'step started: etcd snapshot, copied off-cluster',
      'etcd snapshot failed',
      'stopped',
    ]);
    expect(rootText(op)).toBe(`❌ etcd snapshot of production failed: ${op.reason} (${op.id})`);
    expect(f.chat.thread(op.rootTs!).at(-1)).toContain(`held no lock on production`);
    expect(await holder()).toBeUndefined();
  });

  it('is refused in its preflight while the bot runs on a node of the cluster, touching nothing', async () => {
    // Arrange: the downward API names one of production's Nodes.
    f.deps.placement = { nodeName: 'talos-prd-cp-2', hostIp: '10.0.30.12', podIp: '10.244.1.7' };
    const op = await f.operation({ kind: 'snapshot', state: 'preflight', target: {}, startedBy: undefined });

    // Act
    await createPreflightJob(f.deps, PLAYBOOKS)(job(op.id));

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toEqual([
      expect.stringMatching(/^the bot runs on talos-prd-cp-2, a node of production \(BOT_NODE_NAME talos-prd-cp-2\): /),
    ]);
    expect(events(after)).toEqual(['preflight refused']);
    expect(f.queue.added.filter((j) => j.name === 'operation-run')).toEqual([]);
    expect(existsSync(join(dir, 'snapshots'))).toBe(false);
  });

  it('stops at its step when the replica that runs it is on a node of the cluster, though the preflight passed elsewhere', async () => {
    // Arrange: the preflight ran on a replica off the cluster; the run lands on one whose pod is on production's node.
    const op = await f.operation({ kind: 'snapshot', state: 'preflight', target: {}, startedBy: undefined });
    await createPreflightJob(f.deps, PLAYBOOKS)(job(op.id));
    f.deps.placement = { nodeName: 'talos-mgmt-w-1', hostIp: '10.0.30.13', podIp: undefined };

    // Act
    await createRunJob(f.deps, PLAYBOOKS)(job(op.id));

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('failed');
    expect(after.reason).toMatch(/^the bot runs on talos-prd-cp-3, a node of production \(BOT_HOST_IP 10\.0\.30\.13\): /);
    expect(after.snapshot).toBeUndefined();
    expect(events(after)).toEqual([
      'preflight passed, plan posted',
      'step started: etcd snapshot, copied off-cluster',
      'etcd snapshot failed',
      'stopped',
    ]);
    expect(existsSync(join(dir, 'snapshots'))).toBe(false);
  });

  it('runs while a stopped upgrade holds the cluster, and leaves the lock to it', async () => {
    // Arrange
    const upgrade = await f.operation({
      kind: 'talos-upgrade',
      state: 'failed',
      rootTs: '1700000000.000001',
      target: { version: 'v1.11.6', fromVersion: 'v1.11.5', talosVersion: 'v1.11.5' },
    });
    expect((await f.deps.lock.acquire('production', upgrade.id)).ok).toBe(true);

    // Act
    const op = await snapshot();

    // Assert
    expect(op.state).toBe('completed');
    expect(op.refusals).toEqual([]);
    expect(await holder()).toBe(upgrade.id);
  });

  it('shows a cancel that came before its preflight with the common root, and holds nothing', async () => {
    // Arrange
    const op = await f.operation({ kind: 'snapshot', state: 'preflight', target: {}, startedBy: undefined });
    const cancel = await f.lifecycle().cancel(op.id, 'U0BOB');

    // Act
    await createPreflightJob(f.deps, PLAYBOOKS)(job(op.id));
    await createCancelledJob(f.deps)(job(op.id));

    // Assert
    expect(cancel.ok).toBe(true);
    const after = await stored(op.id);
    expect(after.state).toBe('cancelled');
    expect(after.snapshot).toBeUndefined();
    expect(f.queue.added.filter((j) => j.name === 'operation-run')).toEqual([]);
    expect(await holder()).toBeUndefined();
  });
});

describe('the retired snapshot job', () => {
  it('ends failed, with its reason, a snapshot the previous version created running', async () => {
    // Arrange: as the previous version stored it: running, no steps, its root posted.
    const op = await f.operation({ kind: 'snapshot', state: 'running', target: {}, steps: [], rootTs: '1700000000.000009' });

    // Act
    await createRetiredSnapshotJob(f.deps)(job(op.id));

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('failed');
    expect(after.reason).toBe(RETIRED_SNAPSHOT_REASON);
    expect(events(after)).toEqual(['etcd snapshot failed']);
    expect(rootText(after)).toBe(`❌ etcd snapshot of production failed: ${RETIRED_SNAPSHOT_REASON} (${op.id})`);
  });

  it('leaves a snapshot of this version alone', async () => {
    // Arrange
    const op = await f.operation({
      kind: 'snapshot',
      state: 'running',
      target: {},
      steps: [{ id: 'snapshot', kind: 'snapshot', status: 'pending' }],
      rootTs: '1700000000.000009',
    });

    // Act
    await createRetiredSnapshotJob(f.deps)(job(op.id));

    // Assert
    expect((await stored(op.id)).state).toBe('running');
    expect((await stored(op.id)).audit).toEqual([]);
  });
});
