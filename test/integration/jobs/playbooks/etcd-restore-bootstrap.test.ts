import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StepFailure } from '../../../../jobs/engine/job-context.ts';
import type { PostedOperation, WalkContext } from '../../../../jobs/engine/playbook.ts';
import { playbookContext, recordingContext } from '../../../../jobs/engine/record.ts';
import { etcdRestorePlaybook } from '../../../../jobs/playbooks/etcd-restore/index.ts';
import type { Operation, Step } from '../../../../src/ops/operation.ts';
import { productionShape } from '../../../sim/shapes.ts';
import { engineFixture, type EngineFixture } from '../../../support/engine-fixture.ts';
import { fakeCluster, inventoryOf, type FakeCluster } from '../../../support/fake-cluster.ts';
import { useRedisFixture } from '../../../support/redis-fixture.ts';

const CPS = ['10.0.20.201', '10.0.20.202', '10.0.20.203'];
const shape = productionShape({
  name: 'staging',
  environment: 'staging',
  talosVersion: 'v1.11.5',
  longhorn: false,
  longhornExtensions: undefined,
  nodes: CPS.map((address, i) => ({ hostname: `talos-stg-cp-${i + 1}`, address, role: 'controlplane' as const, host: `pve${i + 1}` })),
  endpoints: CPS,
  vip: '10.0.20.200',
  kubernetesEndpoint: 'https://10.0.20.200:6443',
});
const TERRAFORM_DIR = '/srv/infra/terraform/staging';
const SNAPSHOT = '/var/backups/talos-etcd/staging-20261202T100000Z-rev42.db';

const redis = useRedisFixture();
let f: EngineFixture;
let cluster: FakeCluster;

beforeEach(() => {
  cluster = fakeCluster({ shape, terraformDir: TERRAFORM_DIR });
  f = engineFixture(redis, {
    inventory: inventoryOf(shape, { terraformDir: TERRAFORM_DIR, snapshotDir: '/var/backups/talos-etcd' }),
    cluster,
  });
});

afterEach(() => {
  cluster.close();
});

const bootstrapStep: Step = { id: 'bootstrap', kind: 'bootstrap', node: CPS[0], status: 'running', issuedAt: '2026-12-02T10:05:00.000Z' };

const SNAP = {
  id: 'staging-20261202T100000Z-rev42',
  path: SNAPSHOT,
  bytes: 1_000_000,
  sha256: 'a'.repeat(64),
  revision: 42,
  totalKeys: 9,
  node: CPS[0]!,
  takenAt: '2026-12-02T10:00:00.000Z',
};

/** A rehearsal whose one bootstrap was recorded as issued before the bot restarted. */
async function issuedBefore(): Promise<PostedOperation> {
  const op = await f.operation({
    kind: 'etcd-restore',
    cluster: 'staging',
    channel: 'C0MAINTSTG',
    rootTs: '1700000000.000100',
    target: { talosVersion: 'v1.11.5' },
    snapshot: SNAP,
    steps: [bootstrapStep],
    data: { resets: {}, bootstrap: { node: CPS[0], path: SNAPSHOT, issuedAt: '2026-12-02T10:05:00.000Z' } },
  });
  return op as PostedOperation;
}

/** Runs the bootstrap step as the walk would, on a session to the fake cluster. */
async function runBootstrap(op: Operation): Promise<unknown> {
  const config = f.deps.inventory.clusters.find((c) => c.name === 'staging')!;
  return f.deps.access.withSession(config, AbortSignal.timeout(30_000), async (session) => {
    const ctx: WalkContext = playbookContext(
      recordingContext({ deps: f.deps, cluster: config, session, talosctl: await session.talosctl('v1.11.5'), log: f.deps.logger }, op.id),
    );
    return etcdRestorePlaybook.runStep(ctx, op as PostedOperation, bootstrapStep).catch((error: unknown) => error);
  });
}

describe('the etcd restore bootstrap, once recorded as issued', () => {
  it('is not issued again: the step looks at etcd and goes on when it runs with a leader', async () => {
    // Arrange
    const op = await issuedBefore();

    // Act
    const result = await runBootstrap(op);

    // Assert
    expect(result).toMatchObject({ event: 'bootstrap already issued: not repeated' });
    expect(cluster.talosctlCalls('bootstrap')).toEqual([]);
  });

  it('stops with a decision naming the snapshot and the manual command when etcd is not back, still without issuing it', async () => {
    // Arrange: etcd on the first control plane never runs again.
    const op = await issuedBefore();
    cluster.model.faults.etcdUnhealthy = { [CPS[0]!]: 'Failed' };

    // Act
    const result = await runBootstrap(op);

    // Assert
    expect(result).toBeInstanceOf(StepFailure);
    const failure = result as StepFailure;
    expect(failure.message).toContain('the bootstrap from staging-20261202T100000Z-rev42 was issued to 10.0.20.201');
    expect(failure.message).toContain(`talosctl -n 10.0.20.201 --endpoints 10.0.20.201 bootstrap --recover-from=${SNAPSHOT}`);
    expect(failure.options.noRollback).toBe(true);
    expect(cluster.talosctlCalls('bootstrap')).toEqual([]);
    expect(etcdRestorePlaybook.retryFrom(bootstrapStep, failure)).toBeUndefined();
  });

  it("refuses a snapshot path outside the cluster's snapshot folder (a changed store) and issues nothing, nor records it", async () => {
    // Arrange: a rehearsal whose bootstrap was not issued yet, its stored snapshot pointing elsewhere.
    const step: Step = { id: 'bootstrap', kind: 'bootstrap', node: CPS[0], status: 'running' };
    const op = await f.operation({
      kind: 'etcd-restore',
      cluster: 'staging',
      channel: 'C0MAINTSTG',
      rootTs: '1700000000.000100',
      target: { talosVersion: 'v1.11.5' },
      snapshot: { ...SNAP, path: '/etc/kubernetes/pki/etcd.db' },
      steps: [step],
      data: { resets: {} },
    });
    const config = f.deps.inventory.clusters.find((c) => c.name === 'staging')!;

    // Act
    const result = await f.deps.access.withSession(config, AbortSignal.timeout(30_000), async (session) => {
      const ctx: WalkContext = playbookContext(
        recordingContext(
          { deps: f.deps, cluster: config, session, talosctl: await session.talosctl('v1.11.5'), log: f.deps.logger },
          op.id,
        ),
      );
      return etcdRestorePlaybook.runStep(ctx, op as PostedOperation, step).catch((error: unknown) => error);
    });

    // Assert
    expect(result).toBeInstanceOf(StepFailure);
    const failure = result as StepFailure;
    expect(failure.message).toContain("no longer passes the bot's check, so no bootstrap was issued");
    expect(failure.evidence).toEqual([
      "/etc/kubernetes/pki/etcd.db is not inside the cluster's snapshot folder /var/backups/talos-etcd: the bot restores only snapshots it keeps there",
    ]);
    expect(cluster.talosctlCalls('bootstrap')).toEqual([]);
    expect((await f.deps.store.get(op.id))?.data).toEqual({ resets: {} });
    expect(etcdRestorePlaybook.retryFrom(step, failure)).toBe('bootstrap');
  });

  it('retries a snapshot that failed to be taken, never the check of a snapshot that failed it, and a bootstrap only while it was not issued', () => {
    const step = (kind: string) => ({ id: kind, kind, status: 'failed' as const });
    expect(etcdRestorePlaybook.retryFrom(step('snapshot'))).toBe('snapshot');
    expect(etcdRestorePlaybook.retryFrom(step('verify-snapshot'))).toBeUndefined();
    expect(etcdRestorePlaybook.retryFrom(step('bootstrap'))).toBe('bootstrap');
    expect(etcdRestorePlaybook.retryFrom({ ...step('bootstrap'), issuedAt: '2026-12-02T10:05:00.000Z' })).toBeUndefined();
  });
});
