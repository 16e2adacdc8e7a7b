import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRunJob } from '../../jobs/engine/walk.ts';
import { PLAYBOOKS } from '../../jobs/playbooks/index.ts';
import type { Operation } from '../../src/ops/operation.ts';
import { productionShape } from '../sim/shapes.ts';
import { engineFixture, type EngineFixture } from '../support/engine-fixture.ts';
import { fakeCluster, inventoryOf, type FakeCluster } from '../support/fake-cluster.ts';
import { useRedisFixture } from '../support/redis-fixture.ts';
import { corpusFiles } from './corpus.ts';

/** A stored operation edited in Redis after its plan was approved, and the text its stop must show. */
interface StoredCase {
  about: string;
  operation: Partial<Operation>;
  expect: string;
}

const CASES = corpusFiles('stored', '.json').map((file) => ({ name: file.name, ...(JSON.parse(file.text) as StoredCase) }));

// Three control planes and a worker on v1.11.5, as the bot's other playbook tests use.
const shape = productionShape({
  talosVersion: 'v1.11.5',
  longhorn: false,
  longhornExtensions: undefined,
  nodes: [
    { hostname: 'talos-prd-cp-1', address: '10.0.30.11', role: 'controlplane', host: 'pve1' },
    { hostname: 'talos-prd-cp-2', address: '10.0.30.12', role: 'controlplane', host: 'pve2' },
    { hostname: 'talos-prd-cp-3', address: '10.0.30.13', role: 'controlplane', host: 'pve3' },
    { hostname: 'talos-prd-w-1', address: '10.0.30.21', role: 'worker', host: 'pve1' },
  ],
});
const TERRAFORM_DIR = '/srv/infra/terraform/production';
/** What changes a node or the cluster: none of it may run on a stored fact the rules no longer allow. */
const MUTATING = ['upgrade', 'reset', 'rollback', 'upgrade-k8s', 'reboot', 'apply-config'];

const redis = useRedisFixture();
let f: EngineFixture;
let cluster: FakeCluster;
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'talos-stored-'));
  cluster = fakeCluster({ shape, terraformDir: TERRAFORM_DIR });
  f = engineFixture(redis, {
    inventory: inventoryOf(shape, { terraformDir: TERRAFORM_DIR, snapshotDir: join(dir, 'snapshots') }),
    cluster,
  });
});

afterEach(async () => {
  cluster.close();
  await rm(dir, { recursive: true, force: true });
});

/** Every text of a Block Kit message, in order. */
function texts(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(texts);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => (k === 'text' && typeof v === 'string' ? [v] : texts(v)));
}

describe('the tampered-operation corpus, through the walk of every playbook', () => {
  it('has a case of each field a resumed step reads: image, versions, Node name', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(8);
    expect(CASES.map((c) => c.operation.kind)).toEqual(expect.arrayContaining(['talos-upgrade', 'k8s-upgrade', 'node-remove']));
  });

  it.each(CASES)('$name: $about — stops with the reason and touches nothing', async (stored) => {
    // The step's image is the one the rules derive, except where the case replaces it.
    const schematic = cluster.model.terraform.defaultSchematic;
    const operation = JSON.parse(JSON.stringify(stored.operation).replaceAll('$schematic', schematic)) as Partial<Operation>;
    const op = await f.operation({ ...operation, state: 'running', rootTs: '1700000000.000001' });
    expect((await f.deps.lock.acquire('production', op.id)).ok).toBe(true);
    const versions = ['10.0.30.11', '10.0.30.21'].map((n) => cluster.node(n).talosVersion);

    await createRunJob(f.deps, PLAYBOOKS)({ id: `job-${op.id}`, data: { opId: op.id } } as unknown as Job);

    const after = (await f.deps.store.get(op.id))!;
    expect(after.state).toBe('failed');
    const stop = f.chat.posts.filter((p) => p.threadTs === op.rootTs && p.message.text.includes('❌ Stopped')).at(-1);
    expect([after.reason ?? '', ...texts(stop?.message.blocks ?? [])].join('\n')).toContain(stored.expect);
    for (const command of MUTATING) expect(cluster.talosctlCalls(command)).toEqual([]);
    expect(cluster.events.filter((e) => e.kind === 'node-deleted')).toEqual([]);
    expect(['10.0.30.11', '10.0.30.21'].map((n) => cluster.node(n).talosVersion)).toEqual(versions);
    expect(['10.0.30.11', '10.0.30.21'].map((n) => cluster.node(n).k8sRegistered)).toEqual([true, true]);
  });
});
