import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { workloadCapacityAfterRemoval, workloadNodes } from '../../../src/rules/workload-nodes.ts';

const CONTROL_PLANE_TAINT = { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' };

function node(
  name: string,
  address: string,
  options: { controlPlane?: boolean; taints?: { key: string; value?: string; effect: string }[] } = {},
): V1Node {
  return {
    metadata: { name, labels: options.controlPlane === true ? { 'node-role.kubernetes.io/control-plane': '' } : {} },
    spec: { taints: options.taints ?? [] },
    status: {
      addresses: [
        { type: 'InternalIP', address },
        { type: 'Hostname', address: name },
      ],
    },
  };
}

describe('workloadNodes', () => {
  it('reads which nodes take workloads and the taints that keep them off', () => {
    const nodes = [
      node('cp-1', '10.0.20.204', { controlPlane: true, taints: [CONTROL_PLANE_TAINT] }),
      node('w-1', '10.0.20.205', {
        taints: [
          { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' },
          { key: 'gpu', effect: 'PreferNoSchedule' },
        ],
      }),
      node('w-2', '10.0.20.206', { taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] }),
    ];

    expect(workloadNodes(nodes).map((n) => [n.name, n.controlPlane, n.accepts, n.blockedBy])).toEqual([
      ['cp-1', true, false, ['node-role.kubernetes.io/control-plane:NoSchedule']],
      // A state taint is the health gate's business, and PreferNoSchedule keeps nothing off.
      ['w-1', false, true, []],
      ['w-2', false, false, ['dedicated=db:NoSchedule']],
    ]);
  });
});

describe('workloadCapacityAfterRemoval', () => {
  it('refuses removing the last worker when the control plane keeps its NoSchedule taint, naming the node and the taint', () => {
    const nodes = [
      node('talos-stg-cp-1', '10.0.20.204', { controlPlane: true, taints: [CONTROL_PLANE_TAINT] }),
      node('talos-stg-w-1', '10.0.20.205'),
    ];

    expect(workloadCapacityAfterRemoval(nodes, '10.0.20.205')).toEqual({
      refusal:
        'removing talos-stg-w-1 (10.0.20.205) would leave no node that accepts workloads: talos-stg-cp-1 (control plane) is tainted node-role.kubernetes.io/control-plane:NoSchedule. ' +
        'Add a worker first (a new `talos_nodes` entry, then apply Terraform), or let the control planes take workloads (`allowSchedulingOnControlPlanes: true`), then remove this one',
    });
  });

  it('allows removing the last worker when the control planes take workloads, and says where they go', () => {
    const nodes = [
      node('cp-1', '10.0.30.11', { controlPlane: true }),
      node('cp-2', '10.0.30.12', { controlPlane: true }),
      node('w-1', '10.0.30.21'),
    ];

    expect(workloadCapacityAfterRemoval(nodes, '10.0.30.21')).toEqual({
      note: 'Workloads of w-1 move to cp-1 (control plane), cp-2 (control plane) (cp-1, cp-2: control planes without the node-role.kubernetes.io/control-plane:NoSchedule taint).',
    });
  });

  it('allows removing a worker while another worker remains', () => {
    const nodes = [
      node('cp-1', '10.0.20.204', { controlPlane: true, taints: [CONTROL_PLANE_TAINT] }),
      node('w-1', '10.0.20.205'),
      node('w-2', '10.0.20.206'),
    ];

    expect(workloadCapacityAfterRemoval(nodes, '10.0.20.205')).toEqual({ note: 'Workloads of w-1 move to w-2 (worker).' });
  });

  it('says nothing about a node that takes no workloads itself, or one Kubernetes does not list', () => {
    const nodes = [
      node('cp-1', '10.0.30.11', { controlPlane: true, taints: [CONTROL_PLANE_TAINT] }),
      node('cp-2', '10.0.30.12', { controlPlane: true, taints: [CONTROL_PLANE_TAINT] }),
    ];

    expect(workloadCapacityAfterRemoval(nodes, '10.0.30.12')).toEqual({});
    expect(workloadCapacityAfterRemoval(nodes, '10.0.30.99')).toEqual({});
  });
});
