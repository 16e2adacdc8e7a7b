import { describe, expect, it } from 'vitest';
import { stagingShape } from '../../../sim/shapes.ts';
import { playbookMoves, texts, usePlaybookEstate } from '../../../../test/support/playbook-estate.ts';
import type { EngineFixture } from '../../../../test/support/engine-fixture.ts';
import { TALOSCONFIG, type FakeCluster } from '../../../../test/support/fake-cluster.ts';
import { useRedisFixture } from '../../../../test/support/redis-fixture.ts';

const redis = useRedisFixture();
let f: EngineFixture;
let cluster: FakeCluster;
const estate = usePlaybookEstate(redis, (e) => ({ f, cluster } = e));

/** The engine on another cluster than the default one: `other`, with `options` for its fake cluster. */
const onCluster = estate.on;

const { preflight, run, stored, approve, stopMessage } = playbookMoves(() => f);

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
