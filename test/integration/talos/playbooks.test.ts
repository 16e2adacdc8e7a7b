import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPreflightJob } from '../../../jobs/engine/preflight.ts';
import { createRunJob } from '../../../jobs/engine/walk.ts';
import { PLAYBOOKS } from '../../../jobs/playbooks/index.ts';
import { runHealthGate } from '../../../src/health/health-gate.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { retried } from '../../../src/ops/transitions.ts';
import { parseEtcdMembers } from '../../../src/talos/parse-etcd-members.ts';
import { parseEtcdStatus } from '../../../src/talos/parse-etcd-status.ts';
import { parseServiceInfo } from '../../../src/talos/parse-service.ts';
import { parseTalosVersion } from '../../../src/talos/parse-version.ts';
import { schematicId } from '../../sim/schematics.ts';
import { productionShape, stagingShape } from '../../sim/shapes.ts';
import type { ClusterShape } from '../../sim/types.ts';
import { engineFixture, type EngineFixture } from '../../support/engine-fixture.ts';
import { fakeCluster, inventoryOf, TALOSCONFIG, type FakeCluster } from '../../support/fake-cluster.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

// Three control planes and a worker on v1.11.5 (the patch before the latest); no Longhorn, so a node step does not wait for volume rebuilds.
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

const redis = useRedisFixture();
let f: EngineFixture;
let cluster: FakeCluster;
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'talos-playbooks-'));
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

/** The engine on another cluster than the default one: `other`, with `options` for its fake cluster. */
function onCluster(other: ClusterShape, options: { talosctlBinary?: string; timing?: { rebootMs?: number } } = {}): void {
  cluster.close();
  cluster = fakeCluster({ shape: other, terraformDir: TERRAFORM_DIR, ...options });
  f = engineFixture(redis, {
    inventory: inventoryOf(other, { terraformDir: TERRAFORM_DIR, snapshotDir: join(dir, 'snapshots') }),
    cluster,
  });
}

const job = (opId: string): Job => ({ id: `job-${opId}`, data: { opId } }) as unknown as Job;
const preflight = (opId: string): Promise<void> => createPreflightJob(f.deps, PLAYBOOKS)(job(opId));
const run = (opId: string): Promise<void> => createRunJob(f.deps, PLAYBOOKS)(job(opId));
const stored = async (id: string): Promise<Operation> => (await f.deps.store.get(id))!;

/** What the Start button does once its checks passed: the lock, then the plan becomes a run. */
async function start(opId: string, clusterName = 'production'): Promise<void> {
  expect((await f.deps.lock.acquire(clusterName, opId)).ok).toBe(true);
  await f.deps.store.update(opId, (o) =>
    o.state === 'planned'
      ? { ...o, state: 'running', startedBy: 'U0ALICE', startedAt: f.clock.now.toISOString(), planNonce: undefined }
      : undefined,
  );
}

/** What an approver's click does: the pending request approved, the operation running again. */
async function approve(opId: string): Promise<void> {
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
}

/** Every text of a Block Kit message, in order. */
function texts(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(texts);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => (k === 'text' && typeof v === 'string' ? [v] : texts(v)));
}

/** The stop in the thread as Slack shows it, the evidence under the reason: what the operator reads. */
function stopMessage(op: Operation): string {
  const stop = f.chat.posts.filter((p) => p.threadTs === op.rootTs && p.message.text.includes('❌ Stopped')).at(-1);
  return texts(stop?.message.blocks ?? []).join('\n');
}

/** A stopped Talos upgrade that asked `node` to change: what it ran before, when, and on which boot. */
async function failedUpgrade(node: string, issuedBootId: string): Promise<Operation> {
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
}

describe('the fake cluster', () => {
  it('runs only the checks asked for, forking no talosctl for Kubernetes-only checks', async () => {
    // Arrange
    const config = f.deps.inventory.clusters[0]!;
    const before = cluster.calls.length;

    // Act
    const gate = await f.deps.access.withSession(config, undefined, async (session) =>
      runHealthGate(config, {
        talosctl: await session.talosctl('v1.11.5'),
        kube: session.kube,
        probeTimeoutMs: 5000,
        mode: 'final',
        only: ['pods', 'cilium'],
      }),
    );

    // Assert
    expect(gate.checks.map((c) => [c.id, c.status])).toEqual([
      ['pods', 'passed'],
      ['cilium', 'passed'],
    ]);
    expect(cluster.calls.slice(before).filter((c) => c.bin === 'talosctl')).toEqual([]);
  });

  it('answers in the formats the bot parses: every probe of the health gate passes on a healthy cluster', async () => {
    // Arrange
    const config = f.deps.inventory.clusters[0]!;

    // Act
    const { gate, version, etcdStatus, etcdMembers, serviceEtcd } = await f.deps.access.withSession(config, undefined, async (session) => {
      const talosctl = await session.talosctl('v1.11.5');
      return {
        gate: await runHealthGate(config, { talosctl, kube: session.kube, probeTimeoutMs: 5000 }),
        version: await talosctl.run(['version'], ['10.0.30.11', '10.0.30.21']),
        etcdStatus: await talosctl.run(['etcd', 'status'], config.controlPlanes),
        etcdMembers: await talosctl.run(['etcd', 'members'], ['10.0.30.11']),
        serviceEtcd: await talosctl.run(['service', 'etcd'], ['10.0.30.12']),
      };
    });

    // Assert
    expect(gate.stopReasons).toEqual([]);
    expect(gate.checks.map((c) => [c.id, c.status])).toEqual([
      ['talos-version', 'passed'],
      ['talos-health', 'passed'],
      ['etcd-service', 'passed'],
      ['etcd-status', 'passed'],
      ['nodes', 'passed'],
      ['pods', 'passed'],
      ['flux', 'passed'],
      ['disruption-budgets', 'passed'],
    ]);
    expect(parseTalosVersion(version.stdout)).toEqual({
      client: { tag: 'v1.11.5' },
      servers: [
        { node: '10.0.30.11', tag: 'v1.11.5' },
        { node: '10.0.30.21', tag: 'v1.11.5' },
      ],
    });
    expect(parseEtcdStatus(etcdStatus.stdout).map((r) => [r.node, r.errors])).toEqual(config.controlPlanes.map((cp) => [cp, []]));
    expect(parseEtcdMembers(etcdMembers.stdout)).toHaveLength(3);
    expect(parseServiceInfo(serviceEtcd.stdout)).toMatchObject([{ node: '10.0.30.12', id: 'etcd', state: 'Running', health: 'OK' }]);
    expect(version.command.slice(1)).toEqual([
      'version',
      '--talosconfig',
      TALOSCONFIG,
      '--endpoints',
      '10.0.30.11,10.0.30.12,10.0.30.13',
      '--nodes',
      '10.0.30.11,10.0.30.21',
    ]);
  });
});

describe('a rollback of a node', () => {
  it.each([
    {
      what: 'rebooted since the upgrade was asked: Talos fell back by itself',
      rebooted: true,
      reason: 'Talos fell back to its previous image by itself. A rollback now would boot the image that failed; nothing to roll back',
    },
    {
      what: 'never rebooted: the upgrade never took effect',
      rebooted: false,
      reason: 'never took effect: the node never rebooted and still runs v1.11.5, so there is nothing to roll back',
    },
  ])('is refused when the node already runs what it ran before its upgrade and $what', async ({ rebooted, reason }) => {
    // Arrange
    const node = cluster.node('10.0.30.12');
    if (rebooted) cluster.runsWithFallback('10.0.30.12', 'v1.11.5', 'v1.11.6');
    const upgrade = await failedUpgrade('10.0.30.12', rebooted ? randomUUID() : node.bootId);
    const op = await f.operation({
      kind: 'node-rollback',
      state: 'preflight',
      target: { node: '10.0.30.12' },
      data: { parent: { op: upgrade.id, step: 'node-10.0.30.12' } },
    });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toEqual([expect.stringContaining(reason)]);
    expect(after.refusals[0]).toContain(upgrade.id);
    expect(await f.deps.lock.holder('production')).toBe(upgrade.id);
    expect(f.queue.added.filter((j) => j.name === 'operation-run')).toEqual([]);
    expect(cluster.talosctlCalls('rollback')).toEqual([]);
  });

  it("on the upgrade's target takes over the upgrade's lock, waits for an approver, then runs exactly talosctl rollback through the other control planes", async () => {
    // Arrange
    const bootBeforeUpgrade = randomUUID();
    cluster.runsWithFallback('10.0.30.12', 'v1.11.6', 'v1.11.5');
    const upgrade = await failedUpgrade('10.0.30.12', bootBeforeUpgrade);
    const op = await f.operation({
      kind: 'node-rollback',
      state: 'preflight',
      target: { node: '10.0.30.12' },
      data: { parent: { op: upgrade.id, step: 'node-10.0.30.12' } },
    });

    // Act
    await preflight(op.id);
    const planned = await stored(op.id);
    const lockAfterPreflight = await f.deps.lock.holder('production');
    await run(op.id);
    const waiting = await stored(op.id);
    const rollbacksBeforeApproval = cluster.talosctlCalls('rollback');
    await approve(op.id);
    await run(op.id);

    // Assert
    expect(planned.refusals).toEqual([]);
    expect(planned.state).toBe('running');
    expect(lockAfterPreflight).toBe(op.id);
    expect(waiting.state).toBe('awaiting-approval');
    expect(waiting.approvals.map((a) => [a.step, a.state])).toEqual([['rollback', 'pending']]);
    expect(rollbacksBeforeApproval).toEqual([]);
    expect(cluster.talosctlCalls('rollback')).toEqual([
      ['rollback', '--talosconfig', TALOSCONFIG, '--endpoints', '10.0.30.11,10.0.30.13', '--nodes', '10.0.30.12'],
    ]);
    const after = await stored(op.id);
    expect(after.state).toBe('completed');
    expect(after.validation).toBe('10.0.30.12 back on v1.11.5 and Ready (ran v1.11.6)');
    expect(cluster.node('10.0.30.12').talosVersion).toBe('v1.11.5');
    expect(await f.deps.lock.holder('production')).toBeUndefined();
  });
});

describe('a Kubernetes upgrade', () => {
  it('stops at a failed upgrade-k8s with a Retry from apply, and the retried Apply asks an approver again before upgrade-k8s runs', async () => {
    // Arrange: planned and started, then snapshot and dry run up to the Apply request.
    const op = await f.operation({ kind: 'k8s-upgrade', state: 'preflight', target: { version: '1.34.2' } });
    await preflight(op.id);
    await start(op.id);
    await run(op.id);
    const askedFirst = await stored(op.id);
    cluster.model.faults.upgradeK8sFailOnce = true;
    await approve(op.id);

    // Act
    await run(op.id);
    const failed = await stored(op.id);
    await f.deps.store.update(op.id, (o) => retried(o, failed.retry!.nonce));
    await run(op.id);

    // Assert
    expect(askedFirst.state).toBe('awaiting-approval');
    expect(askedFirst.steps.map((s) => [s.id, s.status])).toEqual([
      ['snapshot', 'done'],
      ['dry-run', 'done'],
      ['apply', 'pending'],
      ['verify', 'pending'],
    ]);
    expect(failed.state).toBe('failed');
    expect(failed.reason).toBe(
      'talosctl upgrade-k8s --to 1.34.2 through 10.0.30.11 failed: failed updating service "kube-apiserver": error updating node "10.0.30.12": config version mismatch: got "5", expected "6"',
    );
    expect(failed.retry).toMatchObject({ step: 'apply', state: 'offered' });
    expect(failed.steps.find((s) => s.id === 'apply')?.status).toBe('failed');
    expect(failed.approvals.map((a) => a.state)).toEqual(['spent']);
    const after = await stored(op.id);
    expect(after.state).toBe('awaiting-approval');
    expect(after.approvals.map((a) => [a.step, a.state])).toEqual([
      ['apply', 'spent'],
      ['apply', 'pending'],
    ]);
    expect(after.steps.map((s) => [s.id, s.status])).toEqual([
      ['snapshot', 'done'],
      ['dry-run', 'done'],
      ['apply', 'pending'],
      ['verify', 'pending'],
    ]);
    expect(cluster.talosctlCalls('upgrade-k8s')).toEqual([
      [
        'upgrade-k8s',
        '--to',
        '1.34.2',
        '--dry-run',
        '--talosconfig',
        TALOSCONFIG,
        '--endpoints',
        '10.0.30.11,10.0.30.12,10.0.30.13',
        '--nodes',
        '10.0.30.11',
      ],
      [
        'upgrade-k8s',
        '--to',
        '1.34.2',
        '--talosconfig',
        TALOSCONFIG,
        '--endpoints',
        '10.0.30.11,10.0.30.12,10.0.30.13',
        '--nodes',
        '10.0.30.11',
      ],
    ]);
    // Under the stop, the end of upgrade-k8s's output: how far it got before the error.
    expect(stopMessage(after)).toContain('"10.0.30.11": waiting for kube-apiserver pod update');
  });
});

describe('a Talos upgrade', () => {
  const image = (schematic: string): string => `factory.talos.dev/nocloud-installer/${schematic}:v1.11.6`;

  /** Planned on a cluster running v1.11.5, then started; the worker was meanwhile upgraded by hand. */
  async function startedWithWorkerOnTarget(): Promise<Operation> {
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.6' } });
    await preflight(op.id);
    await start(op.id);
    cluster.runsWithFallback('10.0.30.21', 'v1.11.6', 'v1.11.5');
    return op;
  }

  it('skips a worker already on the target without talosctl upgrade, waits for an approval before a control plane, then upgrades it through the others', async () => {
    // Arrange
    const op = await startedWithWorkerOnTarget();

    // Act
    await run(op.id);
    const waiting = await stored(op.id);
    const upgradesBeforeApproval = cluster.talosctlCalls('upgrade');
    await approve(op.id);
    await run(op.id);

    // Assert
    expect(waiting.state).toBe('awaiting-approval');
    expect(waiting.steps.map((s) => [s.id, s.status])).toEqual([
      ['snapshot', 'done'],
      ['node-10.0.30.21', 'skipped'],
      ['node-10.0.30.11', 'pending'],
      ['node-10.0.30.12', 'pending'],
      ['node-10.0.30.13', 'pending'],
      ['verify', 'pending'],
    ]);
    expect(waiting.steps[1]!.detail).toBe('already on v1.11.6; not upgraded again');
    expect(waiting.approvals.map((a) => [a.step, a.state])).toEqual([['node-10.0.30.11', 'pending']]);
    expect(upgradesBeforeApproval).toEqual([]);
    const stepImage = image(cluster.model.terraform.defaultSchematic);
    expect(cluster.talosctlCalls('upgrade')).toEqual([
      [
        'upgrade',
        '--image',
        stepImage,
        '--wait',
        '--timeout',
        '20s',
        '--talosconfig',
        TALOSCONFIG,
        '--endpoints',
        '10.0.30.12,10.0.30.13',
        '--nodes',
        '10.0.30.11',
      ],
    ]);
    const after = await stored(op.id);
    expect(after.state).toBe('awaiting-approval');
    expect(after.steps.find((s) => s.id === 'node-10.0.30.11')).toMatchObject({ status: 'done', fromVersion: 'v1.11.5' });
    expect(after.approvals.map((a) => [a.step, a.state])).toEqual([
      ['node-10.0.30.11', 'approved'],
      ['node-10.0.30.12', 'pending'],
    ]);
    expect(cluster.node('10.0.30.11').talosVersion).toBe('v1.11.6');
  });

  it('stops an approved control-plane step before talosctl when Terraform now declares another schematic than the stored image', async () => {
    // Arrange
    const op = await startedWithWorkerOnTarget();
    await run(op.id);
    const planned = cluster.model.terraform.defaultSchematic;
    const declared = schematicId(['siderolabs/qemu-guest-agent']);
    cluster.model.terraform.defaultSchematic = declared;
    await approve(op.id);

    // Act
    await run(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('failed');
    expect(after.reason).toBe(
      'what the bot stored for this step no longer matches the nodes the sources show and the rules; nothing was run',
    );
    expect(after.steps.find((s) => s.id === 'node-10.0.30.11')).toMatchObject({ status: 'failed', image: image(planned) });
    expect(after.steps.find((s) => s.id === 'node-10.0.30.11')?.issuedAt).toBeUndefined();
    // A Retry derives the image again before anything is sent: it is offered, and nothing of the step is in flight.
    expect(after.retry).toMatchObject({ step: 'node-10.0.30.11', state: 'offered' });
    expect(after.retry?.resume).toBeUndefined();
    expect(after.failure).toBeUndefined();
    expect(stopMessage(after)).toContain(`the rules derive ${image(declared)} for 10.0.30.11 now; plan the upgrade again`);
    expect(cluster.talosctlCalls('upgrade')).toEqual([]);
    expect(cluster.node('10.0.30.11').talosVersion).toBe('v1.11.5');
    expect(await f.deps.lock.holder('production')).toBe(op.id);
  });
});

describe('a node removal', () => {
  it('stops the approved reset of a control plane before talosctl reset when etcd would lose quorum without it', async () => {
    // Arrange: planned on a healthy cluster; by the time an approver clicks, another member's etcd has failed.
    const op = await f.operation({ kind: 'node-remove', state: 'preflight', target: { node: '10.0.30.13' } });
    await preflight(op.id);
    await run(op.id);
    const waiting = await stored(op.id);
    cluster.model.faults.etcdUnhealthy = { '10.0.30.12': 'Failed' };
    await approve(op.id);

    // Act
    await run(op.id);

    // Assert
    expect(waiting.state).toBe('awaiting-approval');
    const after = await stored(op.id);
    expect(after.state).toBe('failed');
    expect(after.reason).toBe(
      'etcd quorum: 3 members need 2 for quorum; after removal 2 remain (1 healthy), which cannot keep quorum (2 of 2 needed): do not remove this member',
    );
    expect(stopMessage(after)).toContain('10.0.30.12: rpc error: code = Unknown desc = failed to create etcd client');
    expect(after.steps.map((s) => [s.id, s.status])).toEqual([
      ['reset', 'failed'],
      ['delete-node', 'pending'],
      ['verify', 'pending'],
    ]);
    expect(cluster.talosctlCalls('reset')).toEqual([]);
    expect(cluster.node('10.0.30.13').stage).toBe('running');
    expect(await f.deps.lock.holder('production')).toBe(op.id);
  });

  it('resets a worker with exactly talosctl reset --graceful --reboot=false, deletes its Node and verifies the cluster without it', async () => {
    // Arrange
    const op = await f.operation({ kind: 'node-remove', state: 'preflight', target: { node: '10.0.30.21' } });
    await preflight(op.id);
    await run(op.id);
    const resetsBeforeApproval = cluster.talosctlCalls('reset');
    await approve(op.id);

    // Act
    await run(op.id);

    // Assert
    expect(resetsBeforeApproval).toEqual([]);
    expect(cluster.talosctlCalls('reset')).toEqual([
      [
        'reset',
        '--graceful',
        '--reboot=false',
        '--talosconfig',
        TALOSCONFIG,
        '--endpoints',
        '10.0.30.11,10.0.30.12,10.0.30.13',
        '--nodes',
        '10.0.30.21',
      ],
    ]);
    const after = await stored(op.id);
    expect(after.state).toBe('completed');
    expect(after.steps.map((s) => [s.id, s.status])).toEqual([
      ['reset', 'done'],
      ['delete-node', 'done'],
      ['verify', 'done'],
    ]);
    expect(cluster.events.filter((e) => e.kind === 'node-deleted').map((e) => e.node)).toEqual(['10.0.30.21']);
    expect(cluster.node('10.0.30.21').k8sRegistered).toBe(false);
    expect(await f.deps.lock.holder('production')).toBeUndefined();
  });
});

describe('the version rules of the runbook', () => {
  it('refuses a minor upgrade from a patch that is not the latest of the running minor, and says to patch first as an operation of its own', async () => {
    // Arrange: every node runs v1.11.5; the Image Factory lists v1.11.6.
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.12.11' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toContain(
      'the cluster runs v1.11.5, not v1.11.6, the latest patch of 1.11: patch first, as an operation of its own (`/talos upgrade talos v1.11.6`), then upgrade to v1.12.11; the runbook takes the latest patch of each minor before the next minor',
    );
  });

  it('plans the same minor upgrade from the latest patch of the running minor', async () => {
    // Arrange
    for (const node of cluster.model.nodes) node.talosVersion = 'v1.11.6';
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.12.11' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.refusals).toEqual([]);
    expect(after.state).toBe('planned');
    expect(after.target).toMatchObject({ version: 'v1.12.11', fromVersion: 'v1.11.6' });
  });

  const clientChecked = [
    { kind: 'talos-upgrade' as const, target: { version: 'v1.11.6' }, where: 'the cluster' },
    { kind: 'k8s-upgrade' as const, target: { version: '1.34.2' }, where: 'the cluster' },
    { kind: 'node-rollback' as const, target: { node: '10.0.30.12' }, where: '10.0.30.12' },
    { kind: 'node-remove' as const, target: { node: '10.0.30.21' }, where: '10.0.30.21' },
  ];

  it.each(clientChecked)(
    'refuses a $kind when the one talosctl binary is another version than the running Talos',
    async ({ kind, target, where }) => {
      // Arrange: TALOSCTL_BIN names one talosctl, v1.11.6; the cluster runs v1.11.5.
      onCluster(shape, { talosctlBinary: 'v1.11.6' });
      const op = await f.operation({ kind, state: 'preflight', target });

      // Act
      await preflight(op.id);

      // Assert
      const after = await stored(op.id);
      expect(after.state).toBe('refused');
      expect(after.refusals).toContain(
        `talosctl is v1.11.6 but ${where} runs v1.11.5; the runbook needs a matching client: install talosctl v1.11.5 (or put talosctl-v1.11.5 in the TALOSCTL_BIN directory)`,
      );
      expect(cluster.talosctlCalls('version --client')).not.toEqual([]);
    },
  );

  it.each(clientChecked)('takes a $kind when the one talosctl binary matches the running Talos', async ({ kind, target }) => {
    // Arrange
    onCluster(shape, { talosctlBinary: 'v1.11.5' });
    const op = await f.operation({ kind, state: 'preflight', target });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.refusals).toEqual([]);
    expect(['planned', 'running']).toContain(after.state);
    expect(cluster.talosctlCalls('version --client')).not.toEqual([]);
  });
});

describe('a re-install on the running version', () => {
  const image = (schematic: string): string => `factory.talos.dev/nocloud-installer/${schematic}:v1.11.5`;

  it('is refused when every node already runs the schematic the rules derive', async () => {
    // Arrange
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.5' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toEqual([
      'the cluster already runs v1.11.5 with that schematic on every node: nothing to upgrade or re-install',
    ]);
  });

  it('re-installs only the nodes whose schematic Terraform changed, the control plane after an approval, and checks the schematic each runs', async () => {
    // Arrange: Terraform now declares qemu-guest-agent; two control planes already run it.
    const declared = cluster.declareSchematic(['siderolabs/qemu-guest-agent']);
    const before = cluster.model.terraform.defaultSchematic;
    cluster.model.terraform.defaultSchematic = declared;
    for (const cp of ['10.0.30.11', '10.0.30.12']) cluster.node(cp).schematic = declared;
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.5' } });

    // Act
    await preflight(op.id);
    const planned = await stored(op.id);
    await start(op.id);
    await run(op.id);
    const waiting = await stored(op.id);
    await approve(op.id);
    await run(op.id);

    // Assert
    expect(planned.state).toBe('planned');
    expect(planned.steps.map((s) => [s.id, s.kind, s.image])).toEqual([
      ['snapshot', 'snapshot', undefined],
      ['node-10.0.30.21', 'upgrade-worker', image(declared)],
      ['node-10.0.30.13', 'upgrade-control-plane', image(declared)],
      ['verify', 'verify', undefined],
    ]);
    expect(planned.notes).toEqual([
      `A re-install on v1.11.5, the version every node runs: only the installer image changes, on 10.0.30.13 (default class) from schematic ${before} to ${declared}; ` +
        `10.0.30.21 (default class) from schematic ${before} to ${declared}. Each node reboots into it, with the same approvals as an upgrade.`,
    ]);
    // Every node is of the default class: that is for the record, not the plan.
    expect(planned.mechanics).toEqual([
      'Installer class of each node, and why: 10.0.30.11: default (a control plane, on the default schematic); 10.0.30.12: default (a control plane, on the default schematic); ' +
        '10.0.30.13: default (a control plane: the runbook gives the Longhorn installer to Longhorn workers only); ' +
        `10.0.30.21: default (runs schematic ${before}, neither output's; no node of the cluster runs or is declared in the Longhorn class).`,
    ]);
    expect(waiting.state).toBe('awaiting-approval');
    expect(waiting.approvals.map((a) => [a.step, a.state])).toEqual([['node-10.0.30.13', 'pending']]);
    expect(waiting.steps.find((s) => s.id === 'node-10.0.30.21')).toMatchObject({ status: 'done', fromVersion: 'v1.11.5' });
    const after = await stored(op.id);
    expect(after.state).toBe('completed');
    expect(after.audit.map((e) => e.event)).toEqual(
      expect.arrayContaining([
        're-installed: worker talos-prd-w-1 (10.0.30.21, host pve1)',
        're-installed: control plane talos-prd-cp-3 (10.0.30.13, host pve3)',
      ]),
    );
    expect(cluster.talosctlCalls('upgrade').map((c) => [c[2], c[c.indexOf('--nodes') + 1]])).toEqual([
      [image(declared), '10.0.30.21'],
      [image(declared), '10.0.30.13'],
    ]);
    expect(cluster.events.filter((e) => e.kind === 'upgrade-start').map((e) => [e.node, e.fromVersion, e.toVersion])).toEqual([
      ['10.0.30.21', 'v1.11.5', 'v1.11.5'],
      ['10.0.30.13', 'v1.11.5', 'v1.11.5'],
    ]);
    for (const node of cluster.model.nodes)
      expect([node.address, node.talosVersion, node.schematic]).toEqual([node.address, 'v1.11.5', declared]);
    // The completed operation records the class of each node it installed, for a later Terraform change of a schematic.
    const recorded = await f.deps.nodeClasses.read('production');
    expect(Object.fromEntries([...recorded.byNode].map(([node, r]) => [node, [r.class, r.schematic, r.op]]))).toEqual({
      '10.0.30.13': ['default', declared, op.id],
      '10.0.30.21': ['default', declared, op.id],
    });
  });

  it('skips a node that already runs the new schematic when its step comes, without talosctl upgrade', async () => {
    // Arrange: planned for the worker only; someone re-installed it by hand before the run.
    const declared = cluster.declareSchematic(['siderolabs/qemu-guest-agent']);
    cluster.model.terraform.defaultSchematic = declared;
    for (const cp of cluster.model.nodes.filter((n) => n.role === 'controlplane')) cp.schematic = declared;
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.5' } });
    await preflight(op.id);
    await start(op.id);
    cluster.node('10.0.30.21').schematic = declared;

    // Act
    await run(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('completed');
    expect(after.steps.find((s) => s.id === 'node-10.0.30.21')).toMatchObject({
      status: 'skipped',
      detail: `already runs v1.11.5 with schematic ${declared}; not re-installed`,
    });
    expect(cluster.talosctlCalls('upgrade')).toEqual([]);
  });

  it('stops when the node comes back on the version but without the new schematic (a silent A/B revert)', async () => {
    // Arrange
    const declared = cluster.declareSchematic(['siderolabs/qemu-guest-agent']);
    const before = cluster.model.terraform.defaultSchematic;
    cluster.model.terraform.defaultSchematic = declared;
    for (const cp of cluster.model.nodes.filter((n) => n.role === 'controlplane')) cp.schematic = declared;
    cluster.model.faults.upgradeSilentRevert = ['10.0.30.21'];
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.5' } });
    await preflight(op.id);
    await start(op.id);

    // Act
    await run(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('failed');
    expect(after.reason).toBe(
      `10.0.30.21 came back on v1.11.5 with schematic ${before}, not v1.11.5 with the new schematic: Talos booted the previous image on its own (an A/B fallback; the new image probably could not boot)`,
    );
    expect(stopMessage(after)).toContain(`expected schematic ${declared} (${image(declared)}), node runs ${before}`);
    // Talos already went back: no Rollback, and only an approver's explicit word tries the node again, from scratch.
    expect(after.failure).toBeUndefined();
    expect(after.retry).toMatchObject({ step: 'node-10.0.30.21', resume: 'reissue', explicit: 'Retry the upgrade of this node' });
  });
});

describe('the Longhorn node class', () => {
  // The runbook's design: three control planes on the default schematic (which carries iscsi-tools and
  // util-linux-tools), plus a Longhorn worker built from talos_longhorn_installer_image and a default worker.
  const longhornShape = productionShape({
    nodes: [
      ...productionShape().nodes,
      { hostname: 'talos-prd-w-1', address: '10.0.30.21', role: 'worker', host: 'pve1', longhorn: true, installer: 'longhorn' },
      { hostname: 'talos-prd-w-2', address: '10.0.30.22', role: 'worker', host: 'pve2' },
    ],
  });
  const installer = (schematic: string, version = 'v1.12.11'): string => `factory.talos.dev/nocloud-installer/${schematic}:${version}`;
  const OLD = schematicId(['siderolabs/iscsi-tools']);

  /** The Longhorn estate on v1.11.6, ready for an upgrade to v1.12.11. */
  function onLonghornCluster(): { defaultSchematic: string; longhorn: string } {
    onCluster(longhornShape);
    for (const node of cluster.model.nodes) node.talosVersion = 'v1.11.6';
    return { defaultSchematic: cluster.model.terraform.defaultSchematic, longhorn: cluster.model.terraform.longhornSchematic! };
  }

  async function planned(version = 'v1.12.11'): Promise<Operation> {
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version } });
    await preflight(op.id);
    return stored(op.id);
  }

  it("gives each node the installer of the schematic it runs: the control planes keep the default one, though it carries Longhorn's extensions", async () => {
    // Arrange
    const { defaultSchematic, longhorn } = onLonghornCluster();

    // Act
    const after = await planned();

    // Assert
    expect(after.refusals).toEqual([]);
    expect(after.steps.filter((s) => s.node !== undefined).map((s) => [s.node, s.image])).toEqual([
      ['10.0.30.21', installer(longhorn)],
      ['10.0.30.22', installer(defaultSchematic)],
      ['10.0.30.11', installer(defaultSchematic)],
      ['10.0.30.12', installer(defaultSchematic)],
      ['10.0.30.13', installer(defaultSchematic)],
    ]);
    expect(after.notes).toContain(
      'Installer class of each node, and why: 10.0.30.11: default (a control plane, on the default schematic); 10.0.30.12: default (a control plane, on the default schematic); ' +
        '10.0.30.13: default (a control plane, on the default schematic); 10.0.30.21: Longhorn (runs the Longhorn schematic (talos_longhorn_installer_image)); ' +
        '10.0.30.22: default (runs the default schematic (talos_image_factory_schematic_id)).',
    );
  });

  it('refuses a version upgrade while a control plane runs the Longhorn schematic, and moves it to the default one when asked for on the running version', async () => {
    // Arrange
    const { defaultSchematic, longhorn } = onLonghornCluster();
    cluster.node('10.0.30.12').schematic = longhorn;

    // Act
    const upgrade = await planned();
    const reinstall = await planned('v1.11.6');

    // Assert
    expect(upgrade.state).toBe('refused');
    expect(upgrade.refusals).toEqual([
      `10.0.30.12 is a control plane and runs the Longhorn schematic ${longhorn} (talos_longhorn_installer_image), but the runbook gives the Longhorn installer to Longhorn workers only, ` +
        `so a control plane takes the default schematic ${defaultSchematic} (talos_image_factory_schematic_id). Moving it is a same-version extension change, not part of a version upgrade: ` +
        'ask for it as such (`/talos upgrade talos v1.11.6`), then upgrade',
    ]);
    expect(reinstall.refusals).toEqual([]);
    expect(reinstall.steps.filter((s) => s.node !== undefined).map((s) => [s.node, s.image])).toEqual([
      ['10.0.30.12', installer(defaultSchematic, 'v1.11.6')],
    ]);
    expect(reinstall.notes).toContain(
      `A re-install on v1.11.6, the version every node runs: only the installer image changes, on 10.0.30.12 (default class) from schematic ${longhorn} to ${defaultSchematic}. Each node reboots into it, with the same approvals as an upgrade.`,
    );
  });

  it('refuses a worker on neither schematic with no evidence, naming the three schematics and how to declare its class', async () => {
    // Arrange: Terraform changed a schematic; the worker still runs one that neither output names.
    const { defaultSchematic, longhorn } = onLonghornCluster();
    cluster.node('10.0.30.22').schematic = cluster.declareSchematic(['siderolabs/iscsi-tools']);

    // Act
    const after = await planned();

    // Assert
    expect(after.state).toBe('refused');
    expect(after.refusals).toEqual([
      `10.0.30.22 is a worker that runs schematic ${OLD}, neither the default schematic ${defaultSchematic} (talos_image_factory_schematic_id) nor the Longhorn schematic ${longhorn} (talos_longhorn_installer_image); ` +
        'the bot has recorded no class for it and the inventory declares none, while the cluster has Longhorn nodes, so its installer cannot be chosen safely. ' +
        'Declare its class in the inventory: add it to longhornNodes if it is a Longhorn worker, or to defaultClassNodes if it is not, then plan again',
    ]);
    expect(after.steps.find((s) => s.node === '10.0.30.22')).toBeUndefined();
  });

  it('places a worker on neither schematic by the class recorded at its last completed operation, before the inventory', async () => {
    // Arrange
    const { longhorn } = onLonghornCluster();
    cluster.node('10.0.30.21').schematic = cluster.declareSchematic(['siderolabs/iscsi-tools']);
    f.deps.inventory.clusters[0]!.defaultClassNodes = ['10.0.30.21'];
    await f.deps.nodeClasses.write(
      'production',
      new Map([['10.0.30.21', { class: 'longhorn', schematic: OLD, op: 'op-earlier', at: '2026-11-01T10:00:00.000Z' }]]),
    );

    // Act
    const after = await planned();

    // Assert
    expect(after.refusals).toEqual([]);
    expect(after.steps.find((s) => s.node === '10.0.30.21')?.image).toBe(installer(longhorn));
    expect(after.notes.find((n) => n.startsWith('Installer class'))).toContain(
      `10.0.30.21: Longhorn (runs schematic ${OLD}, neither output's; the bot recorded it in the longhorn class when op-earlier completed)`,
    );
  });

  it("ignores a record that is not the bot's, says so, and then takes the inventory's declaration", async () => {
    // Arrange: someone wrote the record by hand.
    const { defaultSchematic } = onLonghornCluster();
    cluster.node('10.0.30.21').schematic = OLD;
    cluster.node('10.0.30.22').schematic = OLD;
    f.deps.inventory.clusters[0]!.longhornNodes = ['10.0.30.21'];
    f.deps.inventory.clusters[0]!.defaultClassNodes = ['10.0.30.22'];
    await redis
      .client()
      .hset(
        'talos:node-class:production',
        '10.0.30.22',
        JSON.stringify({ class: 'longhorn', schematic: 'not-a-schematic', op: 'x', at: 'yesterday' }),
      );

    // Act
    const after = await planned();

    // Assert
    expect(after.refusals).toEqual([]);
    expect(after.notes).toContain(
      "The bot's record of the node class of 10.0.30.22 is not one it writes (edited or corrupt), so it was ignored: those nodes' classes come from what they run and the inventory.",
    );
    expect(after.steps.find((s) => s.node === '10.0.30.22')?.image).toBe(installer(defaultSchematic));
    expect(after.notes.find((n) => n.startsWith('Installer class'))).toContain(
      `10.0.30.21: Longhorn (runs schematic ${OLD}, neither output's; the inventory declares it (longhornNodes))`,
    );
  });

  it('refuses a Longhorn installer output that is the generic installer', async () => {
    // Arrange
    const { longhorn } = onLonghornCluster();
    cluster.model.faults.tofuOutputs = { talos_longhorn_installer_image: `factory.talos.dev/installer/${longhorn}:v1.11.6` };

    // Act
    const after = await planned();

    // Assert
    expect(after.state).toBe('refused');
    expect(after.refusals).toContain(
      `cannot derive the installer image: talos_longhorn_installer_image is "factory.talos.dev/installer/${longhorn}:v1.11.6", the generic Image Factory installer (factory.talos.dev/installer/…), which can rename eth0 and cut the node off the network: Terraform must output factory.talos.dev/nocloud-installer/<schematic>:<version>`,
    );
    expect(after.steps.filter((s) => s.image !== undefined)).toEqual([]);
  });

  it("gives the default installer to a worker that runs Longhorn's extensions on the default schematic, in a cluster without a Longhorn output", async () => {
    // Arrange: every node of the default cluster runs the default schematic, which carries iscsi-tools and util-linux-tools.
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.6' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.refusals).toEqual([]);
    expect(after.steps.find((s) => s.node === '10.0.30.21')?.image).toBe(
      `factory.talos.dev/nocloud-installer/${cluster.model.terraform.defaultSchematic}:v1.11.6`,
    );
  });

  it('refuses a worker declared a Longhorn worker when Terraform outputs no Longhorn installer', async () => {
    // Arrange
    cluster.node('10.0.30.21').schematic = OLD;
    f.deps.inventory.clusters[0]!.longhornNodes = ['10.0.30.21'];
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.6' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toContain(
      `10.0.30.21 is of the Longhorn node class (it runs schematic ${OLD}, neither output's; the inventory declares it (longhornNodes)), but Terraform outputs no talos_longhorn_installer_image: its installer cannot be chosen`,
    );
  });
});

describe('one control plane', () => {
  it('says in the plan that talosctl has no other endpoint, and polls the rebooting node back through itself without hanging', async () => {
    // Arrange: while it reboots, the only control plane does not answer at all (no refused connection),
    // and it stays down until the bot has given up on a call to it.
    onCluster(stagingShape({ talosVersion: 'v1.11.5' }));
    f.deps.timeouts.probeMs = 1000;
    cluster.model.faults.silentWhileRebooting = ['10.0.20.204'];
    cluster.model.faults.holdReboot = async (node) => {
      if (node.address !== '10.0.20.204') return;
      while (!cluster.calls.some((c) => c.hung !== undefined && c.endedAt !== undefined)) await sleep(10);
    };
    const op = await f.operation({ kind: 'talos-upgrade', cluster: 'staging', state: 'preflight', target: { version: 'v1.11.6' } });

    // Act
    await preflight(op.id);
    const planned = await stored(op.id);
    await start(op.id, 'staging');
    await run(op.id);
    await approve(op.id);
    await run(op.id);

    // Assert
    expect(planned.consequences).toEqual([
      expect.stringMatching(/^⚠ Only control plane: the Kubernetes API and etcd are down while \S+ reboots; the bot waits up to \d+ min/),
    ]);
    expect(planned.mechanics).toContainEqual(
      expect.stringContaining('10.0.20.204 is the only control plane: while it reboots, talosctl has no other endpoint.'),
    );
    expect(planned.notes.join(' ')).not.toContain('talos#11830');
    const after = await stored(op.id);
    expect(after.state).toBe('completed');
    const upgrades = cluster.talosctlCalls('upgrade');
    // The worker goes through the control plane and is waited on; the control plane is only asked.
    expect(upgrades.map((c) => [c[c.indexOf('--nodes') + 1], c.includes('--wait'), c.includes('--wait=false')])).toEqual([
      ['10.0.20.205', true, false],
      ['10.0.20.204', false, true],
    ]);
    const hung = cluster.calls.filter((c) => c.hung !== undefined);
    expect(hung.length).toBeGreaterThan(0);
    // Each was given up by the bot at its bound (the process went away unanswered), none waited out the reboot.
    expect(hung.map((c) => c.exitCode)).toEqual(hung.map(() => null));
    expect(cluster.node('10.0.20.204').talosVersion).toBe('v1.11.6');
  });

  it('stops at the node-ready deadline when the only control plane does not come back, with the last bounded poll', async () => {
    // Arrange: the node stays down until the test brings it up; the bot gives a node two seconds.
    onCluster(stagingShape({ talosVersion: 'v1.11.5' }));
    f.deps.timeouts.probeMs = 500;
    f.deps.timeouts.nodeReadyMs = 2000;
    cluster.model.faults.silentWhileRebooting = ['10.0.20.204'];
    let bringUp = (): void => undefined;
    const up = new Promise<void>((resolve) => (bringUp = resolve));
    cluster.model.faults.holdReboot = (node) => (node.address === '10.0.20.204' ? up : undefined);
    const op = await f.operation({ kind: 'talos-upgrade', cluster: 'staging', state: 'preflight', target: { version: 'v1.11.6' } });
    await preflight(op.id);
    await start(op.id, 'staging');
    await run(op.id);
    await approve(op.id);

    // Act
    await run(op.id);

    // Assert: the run ended on its own bounds, with the node still down.
    const after = await stored(op.id);
    expect(cluster.node('10.0.20.204').stage).toBe('rebooting');
    bringUp();
    expect(after.state).toBe('failed');
    expect(after.reason).toBe('10.0.20.204 was not back and Ready within 2 s');
    expect(stopMessage(after)).toContain('talosctl: no answer within 1 s');
  });
});

describe('removing a node that takes workloads', () => {
  it('refuses the last worker when the only control plane keeps its NoSchedule taint, naming the node and the taint', async () => {
    // Arrange
    onCluster(stagingShape());
    const op = await f.operation({ kind: 'node-remove', cluster: 'staging', state: 'preflight', target: { node: '10.0.20.205' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toContain(
      'removing talos-stg-w-1 (10.0.20.205) would leave no node that accepts workloads: talos-stg-cp-1 (control plane) is tainted node-role.kubernetes.io/control-plane:NoSchedule. ' +
        'Add a worker first (a new `talos_nodes` entry, then apply Terraform), or let the control planes take workloads (`allowSchedulingOnControlPlanes: true`), then remove this one',
    );
    expect(cluster.talosctlCalls('reset')).toEqual([]);
  });

  it('takes the last worker when the control planes accept workloads, and says where they go', async () => {
    // Arrange: the default cluster's control planes carry no NoSchedule taint.
    const op = await f.operation({ kind: 'node-remove', state: 'preflight', target: { node: '10.0.30.21' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.refusals).toEqual([]);
    expect(after.state).toBe('running');
    expect(after.notes).toContain(
      'Workloads of talos-prd-w-1 move to talos-prd-cp-1 (control plane), talos-prd-cp-2 (control plane), talos-prd-cp-3 (control plane) (talos-prd-cp-1, talos-prd-cp-2, talos-prd-cp-3: control planes without the node-role.kubernetes.io/control-plane:NoSchedule taint).',
    );
  });

  it('shows the current quorum in the approval request, and stops before talosctl reset when the health gate fails by the time it is approved', async () => {
    // Arrange: planned on a healthy cluster; a Flux Kustomization stalls before an approver clicks.
    const op = await f.operation({ kind: 'node-remove', state: 'preflight', target: { node: '10.0.30.21' } });
    await preflight(op.id);
    await run(op.id);
    const waiting = await stored(op.id);
    const request = f.chat.posts.find((p) => p.threadTs === waiting.rootTs && p.message.text.startsWith('🔐'));
    const kustomization = cluster.model.kube.flux.find((o) => o.kind === 'Kustomization')!.name;
    cluster.model.faults.fluxStalled = [kustomization];
    await approve(op.id);

    // Act
    await run(op.id);

    // Assert
    expect(texts(request?.message.blocks ?? []).join('\n')).toMatch(
      /etcd:.*a worker is not an etcd member, so its removal leaves quorum as it is/,
    );
    const after = await stored(op.id);
    expect(after.state).toBe('failed');
    expect(after.reason).toBe('the health gate failed before the reset of 10.0.30.21; nothing was reset');
    expect(stopMessage(after)).toContain(kustomization);
    expect(cluster.talosctlCalls('reset')).toEqual([]);
    expect(cluster.node('10.0.30.21').k8sRegistered).toBe(true);
  });
});

describe('the Talos upgrade preflight before any talosctl download', () => {
  /** The versions the preflight asks talosctl for: each one a download when the image does not carry it. */
  function recordClientRequests(): (string | undefined)[] {
    const asked: (string | undefined)[] = [];
    const access = f.deps.access;
    f.deps.access = {
      withSession: (c, signal, work) =>
        access.withSession(c, signal, (session) =>
          work({
            ...session,
            talosctl: (version, options) => {
              asked.push(version);
              return session.talosctl(version, options);
            },
          }),
        ),
    };
    return asked;
  }

  it('refuses a Talos minor the support table lacks, asking for no client of any version', async () => {
    // Arrange
    const asked = recordClientRequests();
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.15.0' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toHaveLength(1);
    expect(after.refusals[0]).toMatch(/^Talos 1\.15 is not in the bot's support table/);
    expect(asked.filter((v) => v !== undefined)).toEqual([]);
  });

  it('refuses outside the maintenance window and while another operation holds the lock, once each, asking for no client of any version', async () => {
    // Arrange: a Tuesday-night window, and the fixture's clock on Tuesday morning; another operation holds the cluster.
    f.deps.inventory.clusters[0]!.maintenanceWindows = [{ start: '0 22 * * 2', durationMinutes: 60, timeZone: 'UTC' }];
    expect((await f.deps.lock.acquire('production', 'op-other')).ok).toBe(true);
    const asked = recordClientRequests();
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.6' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toHaveLength(2);
    expect(after.refusals[0]).toMatch(/^Production changes are taken only inside a maintenance window/);
    expect(after.refusals[1]).toContain('op-other');
    expect(asked.filter((v) => v !== undefined)).toEqual([]);
  });

  it('asks for the running and the target client only for a plan the rules allow', async () => {
    // Arrange
    for (const node of cluster.model.nodes) node.talosVersion = 'v1.11.6';
    const asked = recordClientRequests();
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.12.11' } });

    // Act
    await preflight(op.id);

    // Assert
    expect((await stored(op.id)).state).toBe('planned');
    expect(asked.filter((v) => v !== undefined)).toEqual(['v1.11.6', 'v1.12.11']);
  });
});
