import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPreflightJob } from '../../jobs/engine/preflight.ts';
import { createRunJob } from '../../jobs/engine/walk.ts';
import { PLAYBOOKS } from '../../jobs/playbooks/index.ts';
import { runHealthGate } from '../../src/health/health-gate.ts';
import type { Operation, Step } from '../../src/ops/operation.ts';
import { retried } from '../../src/ops/transitions.ts';
import { parseEtcdMembers } from '../../src/talos/parse-etcd-members.ts';
import { parseEtcdStatus } from '../../src/talos/parse-etcd-status.ts';
import { parseServiceInfo } from '../../src/talos/parse-service.ts';
import { parseTalosVersion } from '../../src/talos/parse-version.ts';
import { schematicId } from '../sim/schematics.ts';
import { productionShape } from '../sim/shapes.ts';
import { engineFixture, type EngineFixture } from '../support/engine-fixture.ts';
import { fakeCluster, inventoryOf, TALOSCONFIG, type FakeCluster } from '../support/fake-cluster.ts';
import { startRedisFixture, type RedisFixture } from '../support/redis-fixture.ts';

// Three control planes and a worker; no Longhorn, so a node step does not wait for volume rebuilds.
const shape = productionShape({
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

let redis: RedisFixture;
let f: EngineFixture;
let cluster: FakeCluster;
let dir: string;

beforeAll(async () => {
  redis = await startRedisFixture();
});

afterAll(async () => {
  await redis?.stop();
});

beforeEach(async () => {
  await redis.flush();
  dir = await mkdtemp(join(tmpdir(), 'talos-playbooks-'));
  cluster = fakeCluster({ shape, terraformDir: TERRAFORM_DIR });
  f = engineFixture(redis, { inventory: inventoryOf(shape, { terraformDir: TERRAFORM_DIR, snapshotDir: join(dir, 'snapshots') }), cluster });
});

afterEach(async () => {
  cluster.close();
  await rm(dir, { recursive: true, force: true });
});

const job = (opId: string): Job => ({ id: `job-${opId}`, data: { opId } }) as unknown as Job;
const preflight = (opId: string): Promise<void> => createPreflightJob(f.deps, PLAYBOOKS)(job(opId));
const run = (opId: string): Promise<void> => createRunJob(f.deps, PLAYBOOKS)(job(opId));
const stored = async (id: string): Promise<Operation> => (await f.deps.store.get(id))!;

/** What the Start button does once its checks passed: the lock, then the plan becomes a run. */
async function start(opId: string): Promise<void> {
  expect((await f.deps.lock.acquire('production', opId)).ok).toBe(true);
  await f.deps.store.update(opId, (o) => (o.state === 'planned' ? { ...o, state: 'running', startedBy: 'U0ALICE', startedAt: f.clock.now.toISOString(), planNonce: undefined } : undefined));
}

/** What an approver's click does: the pending request approved, the operation running again. */
async function approve(opId: string): Promise<void> {
  const { changed } = await f.deps.store.update(opId, (o) =>
    o.state === 'awaiting-approval'
      ? { ...o, state: 'running', approvals: o.approvals.map((a) => (a.state === 'pending' ? { ...a, state: 'approved' as const, by: 'U0CAROL', at: f.clock.now.toISOString() } : a)) }
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
  const upgrade = await f.operation({ kind: 'talos-upgrade', state: 'failed', rootTs: '1700000000.000001', target: { version: 'v1.11.6', fromVersion: 'v1.11.5', talosVersion: 'v1.11.5' }, steps: [step] });
  await f.deps.lock.acquire('production', upgrade.id);
  return upgrade;
}

describe('the fake cluster', () => {
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
    expect(parseTalosVersion(version.stdout)).toEqual({ client: { tag: 'v1.11.5' }, servers: [{ node: '10.0.30.11', tag: 'v1.11.5' }, { node: '10.0.30.21', tag: 'v1.11.5' }] });
    expect(parseEtcdStatus(etcdStatus.stdout).map((r) => [r.node, r.errors])).toEqual(config.controlPlanes.map((cp) => [cp, []]));
    expect(parseEtcdMembers(etcdMembers.stdout)).toHaveLength(3);
    expect(parseServiceInfo(serviceEtcd.stdout)).toMatchObject([{ node: '10.0.30.12', id: 'etcd', state: 'Running', health: 'OK' }]);
    expect(version.command.slice(1)).toEqual(['version', '--talosconfig', TALOSCONFIG, '--endpoints', '10.0.30.11,10.0.30.12,10.0.30.13', '--nodes', '10.0.30.11,10.0.30.21']);
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
    const op = await f.operation({ kind: 'node-rollback', state: 'preflight', target: { node: '10.0.30.12' }, parent: { op: upgrade.id, step: 'node-10.0.30.12' } });

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
    const op = await f.operation({ kind: 'node-rollback', state: 'preflight', target: { node: '10.0.30.12' }, parent: { op: upgrade.id, step: 'node-10.0.30.12' } });

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
    expect(cluster.talosctlCalls('rollback')).toEqual([['rollback', '--talosconfig', TALOSCONFIG, '--endpoints', '10.0.30.11,10.0.30.13', '--nodes', '10.0.30.12']]);
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
      ['upgrade-k8s', '--to', '1.34.2', '--dry-run', '--talosconfig', TALOSCONFIG, '--endpoints', '10.0.30.11,10.0.30.12,10.0.30.13', '--nodes', '10.0.30.11'],
      ['upgrade-k8s', '--to', '1.34.2', '--talosconfig', TALOSCONFIG, '--endpoints', '10.0.30.11,10.0.30.12,10.0.30.13', '--nodes', '10.0.30.11'],
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
      ['upgrade', '--image', stepImage, '--wait', '--timeout', '20s', '--talosconfig', TALOSCONFIG, '--endpoints', '10.0.30.12,10.0.30.13', '--nodes', '10.0.30.11'],
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
    expect(after.reason).toBe('what the bot stored for this step no longer matches the inventory and the rules; nothing was run');
    expect(after.steps.find((s) => s.id === 'node-10.0.30.11')).toMatchObject({ status: 'failed', image: image(planned) });
    expect(after.steps.find((s) => s.id === 'node-10.0.30.11')?.issuedAt).toBeUndefined();
    expect(after.retry).toBeUndefined();
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
    expect(after.reason).toBe('etcd quorum: 3 members need 2 for quorum; after removal 2 remain (1 healthy), which cannot keep quorum (2 of 2 needed): do not remove this member');
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
    expect(cluster.talosctlCalls('reset')).toEqual([['reset', '--graceful', '--reboot=false', '--talosconfig', TALOSCONFIG, '--endpoints', '10.0.30.11,10.0.30.12,10.0.30.13', '--nodes', '10.0.30.21']]);
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
