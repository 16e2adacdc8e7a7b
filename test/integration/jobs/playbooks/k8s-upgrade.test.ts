import { describe, expect, it } from 'vitest';
import { retried } from '../../../../src/ops/transitions.ts';
import { playbookMoves, usePlaybookEstate } from '../../../../test/support/playbook-estate.ts';
import type { EngineFixture } from '../../../../test/support/engine-fixture.ts';
import { TALOSCONFIG, type FakeCluster } from '../../../../test/support/fake-cluster.ts';
import { useRedisFixture } from '../../../../test/support/redis-fixture.ts';

const redis = useRedisFixture();
let f: EngineFixture;
let cluster: FakeCluster;
usePlaybookEstate(redis, (e) => ({ f, cluster } = e));

const { preflight, run, stored, start, approve, stopMessage } = playbookMoves(() => f);

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
