import type { V1DaemonSet, V1Deployment } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { evaluateCilium } from '../../../../src/health/rules/cilium.ts';

function agent(ready: number, desired = 3, observed = 1, generation = 1): V1DaemonSet {
  return {
    metadata: { namespace: 'kube-system', name: 'cilium', generation },
    status: {
      observedGeneration: observed,
      desiredNumberScheduled: desired,
      currentNumberScheduled: desired,
      updatedNumberScheduled: desired,
      numberReady: ready,
      numberAvailable: ready,
      numberMisscheduled: 0,
    },
  };
}

function operator(available: boolean): V1Deployment {
  return {
    metadata: { namespace: 'kube-system', name: 'cilium-operator' },
    status: {
      replicas: 1,
      availableReplicas: available ? 1 : 0,
      conditions: [
        available
          ? { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' }
          : {
              type: 'Available',
              status: 'False',
              reason: 'MinimumReplicasUnavailable',
              message: 'Deployment does not have minimum availability.',
            },
      ],
    },
  };
}

describe('evaluateCilium', () => {
  it('passes when the agent is ready on every node and the operator is available', () => {
    expect(evaluateCilium(agent(3), operator(true), 3)).toEqual({
      id: 'cilium',
      title: 'Cilium agent and operator',
      status: 'passed',
      summary: 'Cilium agent ready on all 3 nodes; operator available',
      evidence: ['agent kube-system/cilium: 3 ready of 3 desired, 3 nodes', 'operator kube-system/cilium-operator: 1 of 1 available'],
    });
  });

  it('fails as settling while an agent is not ready', () => {
    const result = evaluateCilium(agent(2), operator(true), 3);

    expect([result.status, result.settling, result.summary]).toEqual([
      'failed',
      true,
      'Cilium is not healthy: agent ready on 2 of 3 nodes',
    ]);
  });

  it('fails when the agent is not scheduled on every node', () => {
    expect(evaluateCilium(agent(2, 2), operator(true), 3).summary).toBe('Cilium is not healthy: agent scheduled on 2 of 3 nodes');
  });

  it('fails while the agent rollout is not observed yet', () => {
    const result = evaluateCilium(agent(3, 3, 1, 2), operator(true), 3);

    expect(result.summary).toContain('agent DaemonSet generation 2 not observed yet');
  });

  it('fails when the operator is not available, with its reason', () => {
    expect(evaluateCilium(agent(3), operator(false), 3).summary).toBe(
      'Cilium is not healthy: operator not available (MinimumReplicasUnavailable: Deployment does not have minimum availability.)',
    );
  });

  it('fails outright, without waiting, when Cilium is not there', () => {
    const result = evaluateCilium(undefined, undefined, 3);

    expect([result.status, result.settling, result.evidence]).toEqual([
      'failed',
      undefined,
      ['no agent DaemonSet kube-system/cilium', 'no operator Deployment kube-system/cilium-operator'],
    ]);
  });

  describe('the envoy DaemonSet of Cilium ≥ 1.16', () => {
    function envoy(ready: number, desired = 3): V1DaemonSet {
      const set = agent(ready, desired);
      set.metadata = { namespace: 'kube-system', name: 'cilium-envoy', generation: 1, labels: { 'k8s-app': 'cilium-envoy' } };
      return set;
    }
    function agentAt(version: string): V1DaemonSet {
      const set = agent(3);
      set.spec = {
        selector: {},
        template: { spec: { containers: [{ name: 'cilium-agent', image: `quay.io/cilium/cilium:v${version}@sha256:0a1b` }] } },
      };
      return set;
    }

    it('passes when envoy is ready on every node too', () => {
      const result = evaluateCilium(agentAt('1.18.4'), operator(true), 3, envoy(3));

      expect([result.status, result.summary]).toEqual([
        'passed',
        'Cilium agent ready on all 3 nodes; operator available; envoy ready on all nodes',
      ]);
      expect(result.evidence).toContain('envoy kube-system/cilium-envoy: 3 ready of 3 desired');
    });

    it('fails, as settling, when envoy is not ready on a node', () => {
      const result = evaluateCilium(agentAt('1.18.4'), operator(true), 3, envoy(2));

      expect([result.status, result.settling, result.summary]).toEqual([
        'failed',
        true,
        'Cilium is not healthy: envoy ready on 2 of 3 nodes',
      ]);
    });

    it('says where Envoy runs inside the agent instead of failing', () => {
      expect(evaluateCilium(agentAt('1.18.4'), operator(true), 3).evidence).toContain(
        'no kube-system/cilium-envoy DaemonSet: Envoy runs inside the agent (envoy.enabled=false)',
      );
      expect(evaluateCilium(agentAt('1.15.9'), operator(true), 3).evidence).toHaveLength(2);
    });
  });
});
