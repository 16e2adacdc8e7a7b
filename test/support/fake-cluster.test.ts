import { describe, expect, it } from 'vitest';
import { runHealthGate } from '../../src/health/health-gate.ts';
import { parseEtcdMembers } from '../../src/talos/parse-etcd-members.ts';
import { parseEtcdStatus } from '../../src/talos/parse-etcd-status.ts';
import { parseServiceInfo } from '../../src/talos/parse-service.ts';
import { parseTalosVersion } from '../../src/talos/parse-version.ts';
import { usePlaybookEstate } from './playbook-estate.ts';
import type { EngineFixture } from './engine-fixture.ts';
import { TALOSCONFIG, type FakeCluster } from './fake-cluster.ts';
import { useRedisFixture } from './redis-fixture.ts';

const redis = useRedisFixture();
let f: EngineFixture;
let cluster: FakeCluster;
usePlaybookEstate(redis, (e) => ({ f, cluster } = e));

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
