import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { evaluateNodes } from '../../../../src/health/rules/nodes.ts';

interface NodeOptions {
  ready?: 'True' | 'False' | 'Unknown';
  readyMessage?: string;
  unschedulable?: boolean;
  taints?: { key: string; effect: string }[];
  controlPlane?: boolean;
  pressure?: string;
}

function node(name: string, ip: string, options: NodeOptions = {}): V1Node {
  const conditions = [
    { type: 'Ready', status: options.ready ?? 'True', message: options.readyMessage ?? 'kubelet is posting ready status' },
  ];
  if (options.pressure !== undefined)
    conditions.push({ type: options.pressure, status: 'True', message: 'kubelet has insufficient memory available' });
  return {
    metadata: { name, labels: options.controlPlane === true ? { 'node-role.kubernetes.io/control-plane': '' } : {} },
    spec: { unschedulable: options.unschedulable, taints: options.taints },
    status: {
      conditions,
      addresses: [
        { type: 'InternalIP', address: ip },
        { type: 'Hostname', address: name },
      ],
      nodeInfo: {
        kubeletVersion: 'v1.34.1',
        osImage: 'Talos (v1.11.6)',
        architecture: 'amd64',
        bootID: '',
        containerRuntimeVersion: 'containerd://2.1.4',
        kernelVersion: '6.12.48-talos',
        kubeProxyVersion: '',
        machineID: '',
        operatingSystem: 'linux',
        systemUUID: '',
      },
    },
  };
}

const CP = node('talos-cp-1', '10.0.30.11', { controlPlane: true });
const W = node('talos-w-1', '10.0.30.21');

describe('evaluateNodes', () => {
  it('passes with a kubectl-like line per node', () => {
    expect(evaluateNodes([CP, W], ['10.0.30.11', '10.0.30.21'])).toEqual({
      id: 'nodes',
      title: 'Kubernetes nodes',
      status: 'passed',
      summary: '2 nodes Ready and schedulable',
      evidence: [
        'NAME        STATUS  ROLES          INTERNAL-IP  VERSION  OS-IMAGE',
        'talos-cp-1  Ready   control-plane  10.0.30.11   v1.34.1  Talos (v1.11.6)',
        'talos-w-1   Ready   <none>         10.0.30.21   v1.34.1  Talos (v1.11.6)',
      ],
    });
  });

  it('fails on a NotReady node, saying why', () => {
    const notReady = node('talos-w-1', '10.0.30.21', { ready: 'False', readyMessage: 'container runtime network not ready' });

    const result = evaluateNodes([CP, notReady], ['10.0.30.11', '10.0.30.21']);

    expect(result.status).toBe('failed');
    expect(result.summary).toBe('a node is unavailable: talos-w-1 (10.0.30.21) NotReady: container runtime network not ready');
    expect(result.evidence[2]).toBe('talos-w-1   NotReady  <none>         10.0.30.21   v1.34.1  Talos (v1.11.6)');
  });

  it('fails on an unreachable node with its taint', () => {
    const gone = node('talos-cp-2', '10.0.30.12', {
      ready: 'Unknown',
      readyMessage: 'Kubelet stopped posting node status.',
      taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' }],
    });

    const result = evaluateNodes([CP, gone], ['10.0.30.11', '10.0.30.12']);

    expect(result.summary).toBe(
      'a node is unavailable: talos-cp-2 (10.0.30.12) unreachable (Ready=Unknown): Kubelet stopped posting node status., tainted node.kubernetes.io/unreachable:NoExecute',
    );
  });

  it.each([
    ['spec.unschedulable', { unschedulable: true }],
    ['the unschedulable taint', { taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }] }],
  ])('fails on a node cordoned through %s', (_, options) => {
    const result = evaluateNodes([node('talos-w-1', '10.0.30.21', options)], ['10.0.30.21']);

    expect(result.summary).toBe('a node is unavailable: talos-w-1 (10.0.30.21) cordoned (SchedulingDisabled)');
    expect(result.evidence[1]).toContain('Ready,SchedulingDisabled');
  });

  it('fails when an inventory address has no Node', () => {
    const result = evaluateNodes([CP], ['10.0.30.11', '10.0.30.14']);

    expect(result.summary).toBe('a node is unavailable: 10.0.30.14 is in the inventory but no Kubernetes Node has this address');
  });

  it('matches inventory entries by node name too', () => {
    expect(evaluateNodes([CP], ['talos-cp-1']).status).toBe('passed');
  });

  it('warns about pressure conditions', () => {
    const result = evaluateNodes([node('talos-w-1', '10.0.30.21', { pressure: 'MemoryPressure' })], ['10.0.30.21']);

    expect([result.status, result.summary]).toEqual([
      'warning',
      'talos-w-1 (10.0.30.21) has MemoryPressure: kubelet has insufficient memory available',
    ]);
  });

  it('fails when Kubernetes lists no nodes at all', () => {
    expect(evaluateNodes([], []).status).toBe('failed');
  });
});
