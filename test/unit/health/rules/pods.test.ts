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
    });
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
