import { beforeEach, describe, expect, it } from 'vitest';
import type { Playbook, WalkStart } from '../../../../jobs/engine/playbook.ts';
import { LOCK_GONE } from '../../../../jobs/engine/lock-fence.ts';
import { walkOperation } from '../../../../jobs/engine/walk.ts';
import type { ClusterSession } from '../../../../src/cluster/cluster-session.ts';
import type { Tofu } from '../../../../src/cluster/tofu.ts';
import type { RunResult } from '../../../../src/exec/process-runner.ts';
import type { KubeApi } from '../../../../src/kube/kube-api.ts';
import { createClusterLock, RedisEpochLostError } from '../../../../src/ops/cluster-lock.ts';
import type { Operation, Step } from '../../../../src/ops/operation.ts';
import { EPOCH_KEY, establishEpoch } from '../../../../src/ops/redis-epoch.ts';
import type { Talosctl } from '../../../../src/talos/talosctl.ts';
import { engineFixture, type EngineFixture } from '../../../support/engine-fixture.ts';
import { useRedisFixture } from '../../../support/redis-fixture.ts';
import { aTestPlaybook } from '../../../support/test-playbook.ts';

const redis = useRedisFixture();
let f: EngineFixture;
/** Every call that reached the cluster's fakes, as `bin subcommand`. */
let sent: string[];

beforeEach(() => {
  f = engineFixture(redis);
  sent = [];
});

/** The calls that change the cluster; reads (the stop reads where the nodes stand) are not what the fence is about. */
const changes = (): string[] => sent.filter((c) => /^(talosctl (upgrade|reboot|reset|rollback|etcd leave)|tofu apply|kube delete)/.test(c));

const step = (id: string, fields: Partial<Step> = {}): Step => ({ id, kind: 'k8s-apply', status: 'pending', ...fields });

const answer = (command: string[]): RunResult => ({ command, stdout: '', stderr: '', exitCode: 0, durationMs: 1 });

const talosctl: Talosctl = {
  binary: 'talosctl',
  run: (args) => {
    sent.push(`talosctl ${args.join(' ')}`);
    return Promise.resolve(answer(args));
  },
};

function context(deps = f.deps): WalkStart {
  const kube = {
    deleteNode: (name: string) => {
      sent.push(`kube delete node ${name}`);
      return Promise.resolve();
    },
  } as unknown as KubeApi;
  const session = { kube, talosctl: () => Promise.resolve(talosctl) } as unknown as ClusterSession;
  const tofu = {
    run: (_dir: string, args: string[]) => {
      sent.push(`tofu ${args.join(' ')}`);
      return Promise.resolve(answer(args));
    },
  } as unknown as Tofu;
  return { deps: { ...deps, tofu }, cluster: deps.inventory.clusters[0]!, session, talosctl, log: deps.logger };
}

/** A playbook that takes the cluster; `runStep` does what the test needs of the step. */
function playbook(runStep: Playbook['runStep']): Playbook {
  return aTestPlaybook({ heldByWindows: false, runStep });
}

/** Each step upgrades a node, as a node step does: a read, then the call that changes it. */
const upgrading = playbook(async (ctx, _op, s) => {
  await ctx.talosctl.run(['version'], ['10.0.30.11']);
  await ctx.talosctl.run(['upgrade', '--image', 'factory.talos.dev/installer/x:v1.12.11'], ['10.0.30.11']);
  return { event: `ran ${s.id}`, detail: 'ok' };
});

async function started(steps: Step[]): Promise<Operation> {
  const op = await f.operation({ rootTs: '1700000000.000001', steps });
  expect((await f.deps.lock.acquire(op.cluster, op.id)).ok).toBe(true);
  return op;
}

const stored = async (id: string): Promise<Operation> => (await f.deps.store.get(id))!;

describe('the cluster lock fences every step', () => {
  it('stops before a step when the lock key is gone (Redis evicted it or failed over), and sends nothing', async () => {
    // Arrange
    const op = await started([step('first', { status: 'done' }), step('second')]);
    await redis.client().del('talos:lock:production');

    // Act
    await walkOperation(context(), op.id, upgrading);

    // Assert
    const after = await stored(op.id);
    expect(changes()).toEqual([]);
    expect(after.state).toBe('failed');
    expect(after.reason).toBe(LOCK_GONE);
    expect(after.steps.map((s) => s.status)).toEqual(['done', 'pending']);
  });

  it('stops when another operation holds the cluster now, naming it', async () => {
    // Arrange
    const op = await started([step('first')]);
    await redis.client().set('talos:lock:production', 'op-someone-else');

    // Act
    await walkOperation(context(), op.id, upgrading);

    // Assert
    const after = await stored(op.id);
    expect(changes()).toEqual([]);
    expect(after.state).toBe('failed');
    expect(after.audit.find((e) => e.event === 'stopped')?.detail).toBe(LOCK_GONE);
    expect(JSON.stringify(f.chat.posts.at(-1)?.message.blocks)).toContain('held by op-someone-else');
    expect(await f.deps.lock.holder('production')).toBe('op-someone-else');
  });

  it('never sends the upgrade of a step whose lock was lost half-way: reads go on, the change is refused', async () => {
    // Arrange
    const op = await started([step('first')]);
    const losing = playbook(async (ctx, _op, s) => {
      await ctx.talosctl.run(['version'], ['10.0.30.11']);
      await redis.client().del('talos:lock:production');
      await ctx.talosctl.run(['upgrade', '--image', 'factory.talos.dev/installer/x:v1.12.11'], ['10.0.30.11']);
      return { event: `ran ${s.id}`, detail: 'ok' };
    });

    // Act
    await walkOperation(context(), op.id, losing);

    // Assert
    const after = await stored(op.id);
    expect(changes()).toEqual([]);
    expect(sent[0]).toBe('talosctl version');
    expect(after.state).toBe('failed');
    expect(after.reason).toBe(LOCK_GONE);
    expect(after.failure).toBeUndefined();
  });

  it('fences tofu apply, a Node deletion and a talosctl from the session as well', async () => {
    // Arrange
    const op = await started([step('first')]);
    const calls: string[] = [];
    const mutating = playbook(async (ctx, _op, s) => {
      await redis.client().del('talos:lock:production');
      await ctx.deps.tofu.run('/srv/tf', ['plan', '-out', 'x']);
      for (const call of [
        () => ctx.deps.tofu.run('/srv/tf', ['apply', 'x']),
        () => ctx.session.kube.deleteNode('worker-1', AbortSignal.timeout(1000)),
        async () => (await ctx.session.talosctl('v1.11.6')).run(['reboot'], ['10.0.30.11']),
        () => ctx.talosctl.run(['etcd', 'leave'], ['10.0.30.11']),
      ])
        calls.push(
          await call().then(
            () => 'sent',
            (error: Error) => error.message,
          ),
        );
      return { event: `ran ${s.id}`, detail: 'ok' };
    });

    // Act
    await walkOperation(context(), op.id, mutating);

    // Assert
    expect(changes()).toEqual([]);
    expect(sent).toContain('tofu plan -out x');
    expect(calls).toEqual([LOCK_GONE, LOCK_GONE, LOCK_GONE, LOCK_GONE]);
  });

  it('runs every step while the operation holds its cluster', async () => {
    // Arrange
    const op = await started([step('first'), step('second')]);

    // Act
    await walkOperation(context(), op.id, upgrading);

    // Assert
    expect((await stored(op.id)).state).toBe('completed');
    expect(sent.filter((c) => c.startsWith('talosctl upgrade'))).toHaveLength(2);
  });
});

describe('the Redis epoch', () => {
  const epochFor = (lost: string[] = []) =>
    establishEpoch(redis.client(), { reseed: false, now: () => f.clock.now, onLost: (reason) => lost.push(reason) });

  it('stops a walk and refuses any lock once Redis lost its data, though the lock key is still there', async () => {
    // Arrange
    const lost: string[] = [];
    const epoch = await epochFor(lost);
    const lock = createClusterLock(redis.client(), { epoch });
    const deps = { ...f.deps, lock };
    const op = await f.operation({ rootTs: '1700000000.000001', steps: [step('first')] });
    expect((await lock.acquire(op.cluster, op.id)).ok).toBe(true);
    await redis.client().del(EPOCH_KEY);

    // Act
    await walkOperation(context(deps), op.id, upgrading);

    // Assert
    const after = await stored(op.id);
    expect(changes()).toEqual([]);
    expect(after.reason).toBe(LOCK_GONE);
    expect(JSON.stringify(after.audit)).not.toContain('step started');
    expect(await lock.holds('production', op.id)).toBe('epoch-lost');
    await expect(lock.acquire('staging', 'op-new')).rejects.toBeInstanceOf(RedisEpochLostError);
    await expect(lock.transfer('production', op.id, 'op-new')).rejects.toBeInstanceOf(RedisEpochLostError);
    expect(await epoch.check()).toBe(false);
    expect(lost).toHaveLength(1);
    expect(epoch.lostReason()).toContain('Redis lost the data the bot keeps');
  });

  it('is written once at the first start and adopted by every later start', async () => {
    // Act
    const first = await epochFor();
    const stored = await redis.client().get(EPOCH_KEY);
    const second = await epochFor();

    // Assert
    expect(stored).toMatch(/^[0-9a-f-]{36} 2026-12-01T10:00:00.000Z$/);
    expect(first.expected()).toBe(stored);
    expect(second.expected()).toBe(stored);
    expect(await second.check()).toBe(true);
  });

  it('stays lost when another epoch appears (a replica that started on the emptied Redis)', async () => {
    // Arrange
    const epoch = await epochFor();
    await redis.client().set(EPOCH_KEY, 'another');

    // Act
    const intact = await epoch.check();
    await redis.client().del(EPOCH_KEY);
    const later = await epoch.check();

    // Assert
    expect({ intact, later }).toEqual({ intact: false, later: false });
    expect(epoch.lostReason()).toContain('was replaced');
  });

  it('finds the loss at start when bot data is there without an epoch, and re-seeds only when told to', async () => {
    // Arrange
    await redis.client().set('talos:op:op-1', '{}');
    const lost: string[] = [];

    // Act
    const refused = await epochFor(lost);
    const reseeded = await establishEpoch(redis.client(), { reseed: true, now: () => f.clock.now, onLost: (r) => lost.push(r) });

    // Assert
    expect(lost).toEqual([expect.stringContaining('found operations or locks but no epoch at start')]);
    expect(await refused.check()).toBe(false);
    await expect(createClusterLock(redis.client(), { epoch: refused }).acquire('production', 'op-2')).rejects.toBeInstanceOf(
      RedisEpochLostError,
    );
    expect(await reseeded.check()).toBe(true);
    expect(reseeded.expected()).toBe(await redis.client().get(EPOCH_KEY));
  });
});
