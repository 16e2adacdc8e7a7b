import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { evaluatePods } from '../../../../src/health/rules/pods.ts';

function container(ready: boolean, extra: Partial<V1ContainerStatus> = {}): V1ContainerStatus {
  return { name: 'app', image: 'app:1', imageID: '', ready, restartCount: 0, ...extra };
}

interface PodExtras {
  initStatuses?: V1ContainerStatus[];
  deletionTimestamp?: Date;
}

function pod(
  namespace: string,
  name: string,
  phase: string,
  statuses: V1ContainerStatus[] = [container(true)],
  extras: PodExtras = {},
): V1Pod {
  return {
    metadata: { namespace, name, deletionTimestamp: extras.deletionTimestamp },
    spec: { nodeName: 'talos-w-1', containers: statuses.map(() => ({ name: 'app' })) },
    status: { phase, containerStatuses: statuses, initContainerStatuses: extras.initStatuses },
  };
}

describe('evaluatePods', () => {
  it('passes with counts when everything runs or completed', () => {
    const pods = [
      pod('kube-system', 'coredns-1', 'Running'),
      pod('kube-system', 'coredns-2', 'Running'),
      pod('jobs', 'backup-1', 'Succeeded'),
    ];

    expect(evaluatePods(pods)).toEqual({
      id: 'pods',
      title: 'Kubernetes pods (all namespaces)',
      status: 'passed',
      summary: 'all 3 pods healthy: 2 running and ready, 1 completed',
      evidence: [],
    });
  });

  it('warns (never fails) and lists unhealthy pods with their reason', () => {
    const crashing = pod('apps', 'web-0', 'Running', [
      container(false, { restartCount: 12, state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 5m0s' } } }),
    ]);
    const pending = pod('apps', 'web-1', 'Pending', []);
    const unready = pod('apps', 'web-2', 'Running', [container(false, { state: { running: {} } })]);
    const pulling = pod('apps', 'web-3', 'Pending', [container(false, { state: { waiting: { reason: 'ImagePullBackOff' } } })]);

    const result = evaluatePods([pod('kube-system', 'coredns-1', 'Running'), crashing, pending, unready, pulling]);

    expect(result).toEqual({
      id: 'pods',
      title: 'Kubernetes pods (all namespaces)',
      status: 'warning',
      summary: '4 of 5 pods not healthy (1 running and ready)',
      evidence: [
        'apps/web-0: CrashLoopBackOff, 12 restarts on talos-w-1',
        'apps/web-1: Pending on talos-w-1',
        'apps/web-2: Running but not ready (0/1) on talos-w-1',
        'apps/web-3: ImagePullBackOff on talos-w-1',
      ],
      // Item by item for a baseline; none stops the standard gate.
      unwell: [
        ['web-0', 'CrashLoopBackOff'],
        ['web-1', 'Pending'],
        ['web-2', 'Running but not ready (0/1)'],
        ['web-3', 'ImagePullBackOff'],
      ].map(([name, reason]) => ({ key: `pod:apps/${name}`, kind: 'pod', name: `apps/${name}`, node: 'talos-w-1', reason, stops: false })),
    });
  });

  it('keys a pod so that it is recognised after a drain: by its ReplicaSet, a DaemonSet pod by its node, others by name', () => {
    const owned = (name: string, kind: string, owner: string, node: string): V1Pod => {
      const p = pod('apps', name, 'Running', [container(false)]);
      p.metadata = { namespace: 'apps', name, ownerReferences: [{ apiVersion: 'apps/v1', kind, name: owner, uid: 'u', controller: true }] };
      p.spec = { nodeName: node, containers: [{ name: 'app' }] };
      return p;
    };
    const keys = (pods: V1Pod[]): string[] => (evaluatePods(pods, { mode: 'final' }).unwell ?? []).map((u) => u.key);

    expect(
      keys([
        owned('web-7d9c-abcde', 'ReplicaSet', 'web-7d9c', 'talos-w-1'),
        owned('web-7d9c-fghij', 'ReplicaSet', 'web-7d9c', 'talos-w-2'),
        owned('agent-xyz12', 'DaemonSet', 'agent', 'talos-w-1'),
        owned('db-1', 'StatefulSet', 'db', 'talos-w-1'),
        pod('apps', 'debug', 'Running', [container(false)]),
      ]),
    ).toEqual([
      'pod:apps/ReplicaSet/web-7d9c',
      'pod:apps/ReplicaSet/web-7d9c',
      'pod:apps/DaemonSet/agent@talos-w-1',
      'pod:apps/db-1',
      'pod:apps/debug',
    ]);
    expect(evaluatePods([pod('apps', 'x', 'Running', [container(false)])], { mode: 'final' }).unwell?.[0]?.stops).toBe(true);
  });

  it('leaves a pod that already ended (phase Failed) out of the items: nothing waits for it or tolerates it', () => {
    expect(
      evaluatePods([pod('jobs', 'backup-1', 'Failed', [container(false, { state: { terminated: { exitCode: 1 } } })])]).unwell,
    ).toEqual([]);
  });

  it('reports failed init containers and terminating pods', () => {
    const init = pod('db', 'pg-0', 'Pending', [], {
      initStatuses: [container(false, { state: { terminated: { exitCode: 1, reason: 'Error' } } })],
    });
    const terminating = pod('db', 'pg-1', 'Running', [container(true)], { deletionTimestamp: new Date('2026-01-01T00:00:00Z') });

    expect(evaluatePods([init, terminating]).evidence).toEqual(['db/pg-0: Init:Error on talos-w-1', 'db/pg-1: Terminating on talos-w-1']);
  });

  it('caps the evidence and says how many more', () => {
    const pods = Array.from({ length: 30 }, (_, i) => pod('apps', `web-${i}`, 'Pending', []));

    const result = evaluatePods(pods);

    expect(result.evidence).toHaveLength(26);
    expect(result.evidence[25]).toBe('… and 5 more');
  });
  describe('in final mode (application probes pass)', () => {
    it('fails as settling on a running pod that is not ready, naming it', () => {
      const pods = [pod('apps', 'podinfo-1', 'Running', [container(false)]), pod('apps', 'podinfo-2', 'Running')];

      const result = evaluatePods(pods, { mode: 'final' });

      expect([result.status, result.settling, result.summary]).toEqual([
        'failed',
        true,
        '1 of 2 pods not ready: apps/podinfo-1: Running but not ready (0/1) on talos-w-1',
      ]);
    });

    it('passes when every pod is ready or completed', () => {
      expect(evaluatePods([pod('apps', 'podinfo-1', 'Running'), pod('jobs', 'backup-1', 'Succeeded')], { mode: 'final' }).status).toBe(
        'passed',
      );
    });

    it('only warns about a pod that already ended: nothing will make it ready', () => {
      const ended = pod('jobs', 'backup-1', 'Failed', [container(false, { state: { terminated: { exitCode: 1, reason: 'Error' } } })]);

      expect(evaluatePods([ended, pod('apps', 'podinfo-1', 'Running')], { mode: 'final' }).status).toBe('warning');
    });
  });
});
