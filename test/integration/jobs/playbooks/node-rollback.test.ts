import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { playbookMoves, usePlaybookEstate } from '../../../../test/support/playbook-estate.ts';
import type { EngineFixture } from '../../../../test/support/engine-fixture.ts';
import { TALOSCONFIG, type FakeCluster } from '../../../../test/support/fake-cluster.ts';
import { useRedisFixture } from '../../../../test/support/redis-fixture.ts';

const redis = useRedisFixture();
let f: EngineFixture;
let cluster: FakeCluster;
usePlaybookEstate(redis, (e) => ({ f, cluster } = e));

const { preflight, run, stored, approve, failedUpgrade } = playbookMoves(() => f);

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
