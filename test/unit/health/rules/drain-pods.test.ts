import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { drainPods, podList } from '../../../../src/health/rules/drain-pods.ts';

function pod(
  name: string,
  nodeName: string,
  options: { owner?: string; mirror?: boolean; phase?: string; labels?: Record<string, string> } = {},
): V1Pod {
  return {
    metadata: {
      namespace: 'ns',
      name,
      labels: options.labels ?? {},
      ...(options.mirror ? { annotations: { 'kubernetes.io/config.mirror': 'abc' } } : {}),
      ...(options.owner === undefined
        ? {}
        : { ownerReferences: [{ apiVersion: 'v1', kind: options.owner, name: 'o', uid: 'u', controller: true }] }),
    },
    spec: { nodeName, containers: [] },
    status: { phase: options.phase ?? 'Running' },
  };
}

describe('drainPods', () => {
  const pods = [
    pod('web-1', 'w-1', { owner: 'ReplicaSet' }),
    pod('db-0', 'w-1', { owner: 'StatefulSet' }),
    pod('cilium-x', 'w-1', { owner: 'DaemonSet' }),
    pod('kube-apiserver-w-1', 'w-1', { owner: 'Node', mirror: true }),
    pod('debug', 'w-1'),
    pod('job-done', 'w-1', { owner: 'Job', phase: 'Succeeded' }),
    pod('instance-manager-1', 'w-1', { owner: 'InstanceManager', labels: { 'longhorn.io/component': 'instance-manager' } }),
    pod('web-2', 'w-2', { owner: 'ReplicaSet' }),
  ];

  it('evicts what kubectl drain --ignore-daemonsets evicts, leaves DaemonSet, static and controller-less pods, skips finished ones and other nodes', () => {
    const plan = drainPods(pods, 'w-1');

    expect(podList(plan.evict)).toBe('ns/web-1, ns/db-0');
    expect(plan.left).toEqual([
      'ns/cilium-x (DaemonSet)',
      'ns/kube-apiserver-w-1 (static pod)',
      'ns/debug (no controller: the kubelet starts it again after the reboot)',
    ]);
  });

  it("sets Longhorn's instance managers apart, to be evicted once the workloads are gone", () => {
    expect(podList(drainPods(pods, 'w-1').last)).toBe('ns/instance-manager-1');
    expect(drainPods(pods, 'w-2')).toEqual({ evict: [pods[7]], last: [], left: [] });
  });
});
