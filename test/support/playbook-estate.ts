import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import { afterEach, beforeEach, expect } from 'vitest';
import { createPreflightJob } from '../../jobs/engine/preflight.ts';
import { createRunJob } from '../../jobs/engine/walk.ts';
import { PLAYBOOKS } from '../../jobs/playbooks/index.ts';
import type { Operation, Step } from '../../src/ops/operation.ts';
import { productionShape } from '../sim/shapes.ts';
import type { ClusterShape } from '../sim/types.ts';
import { engineFixture, type EngineFixture } from './engine-fixture.ts';
import { fakeCluster, inventoryOf, type FakeCluster, type FakeClusterOptions } from './fake-cluster.ts';
import type { RedisFixture } from './redis-fixture.ts';
import { PRODUCTION_CONTROL_PLANES } from './inventory-yaml.ts';

export const TERRAFORM_DIR = '/srv/infra/terraform/production';

/** Production's three control planes (talos-prd-cp-1..3 on pve1..3), as the simulator declares nodes. */
export const PRODUCTION_CONTROL_PLANE_NODES: { hostname: string; address: string; role: 'controlplane'; host: string }[] =
  PRODUCTION_CONTROL_PLANES.map((address, i) => ({
    hostname: `talos-prd-cp-${i + 1}`,
    address,
    role: 'controlplane' as const,
    host: `pve${i + 1}`,
  }));

/**
 * Three control planes and a worker on v1.11.5 (the patch before the latest); no Longhorn, so a node step
 * does not wait for volume rebuilds. The estate the playbooks' integration tests run on by default.
 */
export function threeControlPlanesAndAWorker(): ClusterShape {
  return productionShape({
    talosVersion: 'v1.11.5',
    longhorn: false,
    longhornExtensions: undefined,
    nodes: [...PRODUCTION_CONTROL_PLANE_NODES, { hostname: 'talos-prd-w-1', address: '10.0.30.21', role: 'worker', host: 'pve1' }],
  });
}

/** A scratch folder for the snapshots an estate writes. */
export const scratchDir = (): Promise<string> => mkdtemp(join(tmpdir(), 'talos-playbooks-'));
export const removeDir = (dir: string): Promise<void> => rm(dir, { recursive: true, force: true });

/** The engine on a fake cluster of `shape`, its inventory derived from the shape, its snapshots under `dir`. */
export function playbookEstate(
  redis: RedisFixture,
  shape: ClusterShape,
  dir: string,
  options: EstateOptions = {},
): { f: EngineFixture; cluster: FakeCluster } {
  const cluster = fakeCluster({ shape, terraformDir: TERRAFORM_DIR, ...options });
  const f = engineFixture(redis, {
    inventory: inventoryOf(shape, { terraformDir: TERRAFORM_DIR, snapshotDir: join(dir, 'snapshots') }),
    cluster,
  });
  return { f, cluster };
}

type EstateOptions = Pick<FakeClusterOptions, 'talosctlBinary' | 'timing'>;

/**
 * A fresh estate for each test of the file (three control planes and a worker, in a scratch folder that
 * is removed after it): `use` receives each new estate, and `on` moves the test to another shape.
 */
export function usePlaybookEstate(
  redis: RedisFixture,
  use: (estate: { f: EngineFixture; cluster: FakeCluster }) => void,
): { on: (shape: ClusterShape, options?: EstateOptions) => void } {
  let dir = '';
  let cluster: FakeCluster | undefined;
  const on = (shape: ClusterShape, options: EstateOptions = {}): void => {
    cluster?.close();
    const estate = playbookEstate(redis, shape, dir, options);
    cluster = estate.cluster;
    use(estate);
  };
  beforeEach(async () => {
    dir = await scratchDir();
    on(threeControlPlanesAndAWorker());
  });
  afterEach(async () => {
    cluster?.close();
    cluster = undefined;
    await removeDir(dir);
  });
  return { on };
}

/** Every text of a Block Kit message, in order. */
export function texts(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(texts);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => (k === 'text' && typeof v === 'string' ? [v] : texts(v)));
}

/**
 * The moves a test makes on the engine of `fixture()` (read at each call, since a test may switch
 * clusters): the jobs the queue would run, and what the Start and an approver's click write.
 */
export function playbookMoves(fixture: () => EngineFixture) {
  const job = (opId: string): Job => ({ id: `job-${opId}`, data: { opId } }) as unknown as Job;
  return {
    preflight: (opId: string): Promise<void> => createPreflightJob(fixture().deps, PLAYBOOKS)(job(opId)),
    run: (opId: string): Promise<void> => createRunJob(fixture().deps, PLAYBOOKS)(job(opId)),
    stored: async (id: string): Promise<Operation> => (await fixture().deps.store.get(id))!,

    /** What the Start button does once its checks passed: the lock, then the plan becomes a run. */
    start: async (opId: string, clusterName = 'production'): Promise<void> => {
      const f = fixture();
      expect((await f.deps.lock.acquire(clusterName, opId)).ok).toBe(true);
      await f.deps.store.update(opId, (o) =>
        o.state === 'planned'
          ? { ...o, state: 'running', startedBy: 'U0ALICE', startedAt: f.clock.now.toISOString(), planNonce: undefined }
          : undefined,
      );
    },

    /** What an approver's click does: the pending request approved, the operation running again. */
    approve: async (opId: string): Promise<void> => {
      const f = fixture();
      const { changed } = await f.deps.store.update(opId, (o) =>
        o.state === 'awaiting-approval'
          ? {
              ...o,
              state: 'running',
              approvals: o.approvals.map((a) =>
                a.state === 'pending' ? { ...a, state: 'approved' as const, by: 'U0CAROL', at: f.clock.now.toISOString() } : a,
              ),
            }
          : undefined,
      );
      expect(changed).toBe(true);
    },

    /** The stop in the thread as Slack shows it, the evidence under the reason: what the operator reads. */
    stopMessage: (op: Operation): string => {
      const stop = fixture()
        .chat.posts.filter((p) => p.threadTs === op.rootTs && p.message.text.includes('❌ Stopped'))
        .at(-1);
      return texts(stop?.message.blocks ?? []).join('\n');
    },

    /** A stopped Talos upgrade that asked `node` to change: what it ran before, when, and on which boot. */
    failedUpgrade: async (node: string, issuedBootId: string): Promise<Operation> => {
      const f = fixture();
      const step: Step = {
        id: `node-${node}`,
        kind: 'upgrade-control-plane',
        node,
        status: 'failed',
        issuedAt: '2026-12-01T09:40:00.000Z',
        fromVersion: 'v1.11.5',
        issuedBootId,
      };
      const upgrade = await f.operation({
        kind: 'talos-upgrade',
        state: 'failed',
        rootTs: '1700000000.000001',
        target: { version: 'v1.11.6', fromVersion: 'v1.11.5', talosVersion: 'v1.11.5' },
        steps: [step],
      });
      await f.deps.lock.acquire('production', upgrade.id);
      return upgrade;
    },
  };
}
