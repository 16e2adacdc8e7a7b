import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPreflightJob } from '../../../jobs/engine/preflight.ts';
import { PLAYBOOKS } from '../../../jobs/playbooks/index.ts';
import { maintenanceRecordMarkdown } from '../../../src/chat/maintenance-record.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { productionShape } from '../../sim/shapes.ts';
import { engineFixture, type EngineFixture } from '../../support/engine-fixture.ts';
import { fakeCluster, inventoryOf, type FakeCluster } from '../../support/fake-cluster.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

// Three control planes and a worker on v1.11.6, the latest patch of 1.11; no Longhorn.
const shape = productionShape({
  talosVersion: 'v1.11.6',
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
const TARGET = 'v1.12.11';

const redis = useRedisFixture();
let f: EngineFixture;
let cluster: FakeCluster;
let dir: string;

function onCluster(options: { talosctlBinary?: string } = {}): void {
  cluster?.close();
  cluster = fakeCluster({ shape, terraformDir: TERRAFORM_DIR, ...options });
  f = engineFixture(redis, {
    inventory: inventoryOf(shape, { terraformDir: TERRAFORM_DIR, snapshotDir: join(dir, 'snapshots') }),
    cluster,
  });
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'talos-continuation-'));
  onCluster();
});

afterEach(async () => {
  cluster.close();
  await rm(dir, { recursive: true, force: true });
});

const job = (opId: string): Job => ({ id: `job-${opId}`, data: { opId } }) as unknown as Job;

/** An upgrade to `target` asked for and its preflight run; the stored result. */
async function planned(target = TARGET): Promise<Operation> {
  const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: target } });
  await createPreflightJob(f.deps, PLAYBOOKS)(job(op.id));
  return (await f.deps.store.get(op.id))!;
}

/** The state an upgrade stopped after the worker and the first control plane leaves. */
function halfUpgraded(): void {
  cluster.node('10.0.30.21').talosVersion = TARGET;
  cluster.node('10.0.30.11').talosVersion = TARGET;
}

const installer = (version: string): string => `factory.talos.dev/nocloud-installer/${cluster.model.terraform.defaultSchematic}:${version}`;

describe('a Talos upgrade on a half-upgraded cluster', () => {
  it('is planned as a continuation: only the nodes still on the previous version get a step, after a new snapshot', async () => {
    // Arrange: the earlier, cancelled upgrade is in the records.
    halfUpgraded();
    const earlier = await f.operation({
      kind: 'talos-upgrade',
      state: 'cancelled',
      target: { version: TARGET, fromVersion: 'v1.11.6' },
      steps: [
        { id: 'node-10.0.30.21', kind: 'upgrade-worker', node: '10.0.30.21', status: 'done' },
        { id: 'node-10.0.30.11', kind: 'upgrade-control-plane', node: '10.0.30.11', status: 'done' },
        { id: 'node-10.0.30.12', kind: 'upgrade-control-plane', node: '10.0.30.12', status: 'failed' },
      ],
    });

    // Act
    const after = await planned();

    // Assert
    expect(after.refusals).toEqual([]);
    expect(after.state).toBe('planned');
    expect(after.target).toMatchObject({ version: TARGET, fromVersion: 'v1.11.6', talosVersion: 'v1.11.6' });
    expect(after.steps.map((s) => [s.kind, s.node, s.image])).toEqual([
      ['snapshot', undefined, undefined],
      ['upgrade-control-plane', '10.0.30.12', installer(TARGET)],
      ['upgrade-control-plane', '10.0.30.13', installer(TARGET)],
      ['verify', undefined, undefined],
    ]);
    expect(after.data).toEqual({
      // The installer image each node class is given: what makes a staging rehearsal the exact target.
      classImages: { default: installer(TARGET) },
      continuation: {
        from: 'v1.11.6',
        done: [
          { node: '10.0.30.11', nodeName: 'talos-prd-cp-1', image: installer(TARGET), op: earlier.id },
          { node: '10.0.30.21', nodeName: 'talos-prd-w-1', image: installer(TARGET), op: earlier.id },
        ],
      },
    });
    expect(after.notes).toContain(
      `A continuation of an earlier upgrade to ${TARGET}: already on ${TARGET} from an earlier upgrade: ` +
        `talos-prd-cp-1 (10.0.30.11) by ${earlier.id}, talos-prd-w-1 (10.0.30.21) by ${earlier.id}. ` +
        'Those nodes get no step; this plan takes a new etcd snapshot, then upgrades the other 2 from v1.11.6, with the same approvals as an upgrade.',
    );
    // Every talosctl of the preflight is the client of the nodes still to upgrade.
    const clients = new Set(cluster.calls.filter((c) => c.bin === 'talosctl').map((c) => c.clientVersion));
    expect([...clients]).toEqual(['v1.11.6']);
    expect(PLAYBOOKS['talos-upgrade']!.texts.title(after)).toBe(`Talos upgrade v1.11.6 → ${TARGET} (continued): production`);
    expect(maintenanceRecordMarkdown(after)).toContain(
      `- Continues an earlier upgrade to ${TARGET}: already on it before this operation, so not upgraded by it: ` +
        `talos-prd-cp-1 (10.0.30.11) upgraded by ${earlier.id}; talos-prd-w-1 (10.0.30.21) upgraded by ${earlier.id}`,
    );
  });

  it('refuses a talosctl client of the target: the client must match the nodes still to upgrade', async () => {
    // Arrange: TALOSCTL_BIN names one talosctl, of the target.
    onCluster({ talosctlBinary: TARGET });
    halfUpgraded();

    // Act
    const after = await planned();

    // Assert
    expect(after.state).toBe('refused');
    expect(after.refusals).toContain(
      `talosctl is ${TARGET} but the cluster runs v1.11.6; the runbook needs a matching client: install talosctl v1.11.6 (or put talosctl-v1.11.6 in the TALOSCTL_BIN directory)`,
    );
  });

  it('refuses when a node on the target runs another schematic than the rules give it: it is not done', async () => {
    // Arrange
    halfUpgraded();
    const other = cluster.declareSchematic(['siderolabs/iscsi-tools']);
    cluster.node('10.0.30.11').schematic = other;

    // Act
    const after = await planned();

    // Assert
    expect(after.state).toBe('refused');
    expect(after.refusals).toEqual([
      `10.0.30.11 runs ${TARGET} but with schematic ${other}, not ${cluster.model.terraform.defaultSchematic}, the one of its default class (a control plane: the runbook gives the Longhorn installer to Longhorn workers only): ` +
        `it is not done, so the upgrade cannot continue past it; roll it back (\`/talos rollback 10.0.30.11\`) or re-install it with ${installer(TARGET)}, then ask again`,
    ]);
    expect(cluster.talosctlCalls('upgrade')).toEqual([]);
  });

  it('refuses three versions, naming each version and its nodes', async () => {
    // Arrange
    halfUpgraded();
    cluster.node('10.0.30.13').talosVersion = 'v1.11.5';

    // Act
    const after = await planned();

    // Assert
    expect(after.state).toBe('refused');
    expect(after.refusals).toContainEqual(
      expect.stringContaining(
        'the cluster runs mixed Talos versions (v1.12.11 on 10.0.30.11, 10.0.30.21; v1.11.6 on 10.0.30.12; v1.11.5 on 10.0.30.13)',
      ),
    );
    // No continuation is planned for a cluster on three versions.
    expect(after.data?.continuation).toBeUndefined();
  });

  it('refuses the target beside a version an upgrade to it may not start from', async () => {
    // Arrange: the other nodes run v1.11.5, not the latest patch of 1.11.
    halfUpgraded();
    cluster.node('10.0.30.12').talosVersion = 'v1.11.5';
    cluster.node('10.0.30.13').talosVersion = 'v1.11.5';

    // Act
    const after = await planned();

    // Assert
    expect(after.state).toBe('refused');
    expect(after.refusals).toContainEqual(
      expect.stringMatching(
        /^the cluster runs mixed Talos versions \(v1\.12\.11 on 10\.0\.30\.11, 10\.0\.30\.21; v1\.11\.5 on 10\.0\.30\.12, 10\.0\.30\.13\): v1\.11\.5 is not a version an upgrade to v1\.12\.11 may start from/,
      ),
    );
  });

  it('refuses a Kubernetes upgrade on it, and says the Talos upgrade continues with /talos upgrade talos <target>', async () => {
    // Arrange
    halfUpgraded();
    const op = await f.operation({ kind: 'k8s-upgrade', state: 'preflight', target: { version: '1.34.2' } });

    // Act
    await createPreflightJob(f.deps, PLAYBOOKS)(job(op.id));

    // Assert
    const after = (await f.deps.store.get(op.id))!;
    expect(after.state).toBe('refused');
    expect(after.refusals).toContain(
      'the cluster runs mixed Talos versions (v1.12.11, v1.11.6); finish the Talos upgrade first (`/talos upgrade talos v1.12.11` continues it) or roll it back: Talos and Kubernetes upgrades never overlap',
    );
  });
});
