import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../../../../src/health/check-result.ts';
import { gateVerdict } from '../../../../src/health/rules/verdict.ts';

function check(id: string, status: CheckResult['status'], summary: string): CheckResult {
  return { id, title: id, status, summary, evidence: [] };
}

describe('gateVerdict', () => {
  it('passes with passed and warning checks', () => {
    expect(gateVerdict([check('nodes', 'passed', 'ok'), check('pods', 'warning', '2 pods not healthy')])).toEqual({
      passed: true,
      stopReasons: [],
    });
  });

  it('fails with every failed summary as a stop reason, in order', () => {
    const results = [
      check('etcd-status', 'failed', 'etcd has no leader on 10.0.20.205'),
      check('pods', 'warning', '2 pods not healthy'),
      check('flux', 'failed', 'Flux is failing: Kustomization flux-system/apps: Stalled=True'),
    ];

    expect(gateVerdict(results)).toEqual({
      passed: false,
      stopReasons: ['etcd has no leader on 10.0.20.205', 'Flux is failing: Kustomization flux-system/apps: Stalled=True'],
    });
  });

  it('does not pass a gate that ran no checks', () => {
    expect(gateVerdict([])).toEqual({ passed: false, stopReasons: ['no health check ran'] });
  });
});
