import type { V1PodDisruptionBudget } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { evaluateDisruptionBudgets } from '../../src/health/rules/pdb.ts';

function pdb(namespace: string, name: string, status: V1PodDisruptionBudget['status'], generation = 1): V1PodDisruptionBudget {
  return { metadata: { namespace, name, generation }, spec: { minAvailable: 1 }, status };
}

const HEALTHY = { currentHealthy: 3, desiredHealthy: 2, disruptionsAllowed: 1, expectedPods: 3, observedGeneration: 1 };

describe('evaluateDisruptionBudgets', () => {
  it('passes when every budget allows a disruption', () => {
    expect(evaluateDisruptionBudgets([pdb('apps', 'web', HEALTHY)])).toEqual({
      id: 'disruption-budgets',
      title: 'PodDisruptionBudgets',
      status: 'passed',
      summary: '1 PodDisruptionBudget, all allow a disruption',
      evidence: [],
    });
  });

  it('fails on a budget that allows no disruption, with its counts', () => {
    const blocking = pdb('longhorn-system', 'instance-manager', { currentHealthy: 1, desiredHealthy: 1, disruptionsAllowed: 0, expectedPods: 1, observedGeneration: 1 });

    const result = evaluateDisruptionBudgets([pdb('apps', 'web', HEALTHY), blocking]);

    expect(result.status).toBe('failed');
    expect(result.evidence).toEqual(['PDB longhorn-system/instance-manager: disruptionsAllowed=0 (currentHealthy 1 / desiredHealthy 1)']);
    expect(result.summary).toBe(
      'a PodDisruptionBudget allows no disruption, so a drain would block: PDB longhorn-system/instance-manager: disruptionsAllowed=0 (currentHealthy 1 / desiredHealthy 1)',
    );
  });

  it('ignores a budget that expects no pods', () => {
    const empty = pdb('apps', 'idle', { currentHealthy: 0, desiredHealthy: 1, disruptionsAllowed: 0, expectedPods: 0, observedGeneration: 1 });

    expect(evaluateDisruptionBudgets([empty]).status).toBe('passed');
  });

  it('warns about a stale status', () => {
    const stale = pdb('apps', 'web', HEALTHY, 2);

    const result = evaluateDisruptionBudgets([stale]);

    expect([result.status, result.evidence]).toEqual([
      'warning',
      ['PDB apps/web: status is stale (observedGeneration 1 < generation 2): evictions wait for the disruption controller'],
    ]);
  });

  it('warns about a budget whose sync failed', () => {
    const sync = pdb('apps', 'web', {
      ...HEALTHY,
      conditions: [
        { type: 'DisruptionAllowed', status: 'False', reason: 'SyncFailed', message: 'Pod apps/web-0 matches multiple PodDisruptionBudgets', lastTransitionTime: new Date(0) },
      ],
    });

    expect(evaluateDisruptionBudgets([sync]).summary).toBe('PDB apps/web: SyncFailed: Pod apps/web-0 matches multiple PodDisruptionBudgets');
  });

  it('passes with no budgets at all', () => {
    expect(evaluateDisruptionBudgets([]).summary).toBe('no PodDisruptionBudgets');
  });
});
