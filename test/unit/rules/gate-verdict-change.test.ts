import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../../../src/health/check-result.ts';
import type { GateReport } from '../../../src/health/health-gate.ts';
import { driftChange, errorVerdict, verdictChange, verdictOf } from '../../../src/rules/gate-verdict-change.ts';

function report(statuses: Record<string, CheckResult['status']>): GateReport {
  const checks = Object.entries(statuses).map(([id, status]) => ({ id, title: id, status, summary: status, evidence: [] }));
  return {
    cluster: 'production',
    passed: checks.every((c) => c.status !== 'failed'),
    stopReasons: [],
    checks,
    startedAt: '2026-12-01T08:00:00.000Z',
    durationMs: 1,
    slowestProbeMs: 1,
  };
}

describe('the verdict a scheduled gate compares', () => {
  it('is pass or fail and the sorted ids of the failed checks; warnings do not count', () => {
    expect(verdictOf(report({ nodes: 'failed', flux: 'warning', 'etcd-status': 'failed' }))).toEqual({
      passed: false,
      failing: ['etcd-status', 'nodes'],
    });
    expect(verdictOf(report({ nodes: 'passed', flux: 'warning' }))).toEqual({ passed: true, failing: [] });
  });

  it('changes on the first run, pass→fail, fail→pass and another set of failing checks, and only then', () => {
    const pass = verdictOf(report({ nodes: 'passed' }));
    const nodes = verdictOf(report({ nodes: 'failed', flux: 'passed' }));
    const flux = verdictOf(report({ nodes: 'passed', flux: 'failed' }));

    expect(verdictChange(undefined, pass)).toBe('first');
    expect(verdictChange(pass, pass)).toBeUndefined();
    expect(verdictChange(pass, nodes)).toBe('failing');
    expect(verdictChange(nodes, verdictOf(report({ flux: 'warning', nodes: 'failed' })))).toBeUndefined();
    expect(verdictChange(nodes, flux)).toBe('changed');
    expect(verdictChange(flux, pass)).toBe('recovered');
    expect(verdictChange(errorVerdict(), errorVerdict())).toBeUndefined();
    expect(verdictChange(nodes, errorVerdict())).toBe('changed');
  });

  it('tells drift appearing, changing and clearing apart, and a gate that did not compare moves nothing', () => {
    const drift = (lines: string[] | undefined) => ({ passed: true, failing: [], ...(lines === undefined ? {} : { drift: lines }) });
    const talos = ['Terraform declares Talos v1.12.11 (output talos_version), but 3 node(s) run another version (highest v1.13.9)'];
    expect(driftChange(undefined, drift([]))).toBeUndefined();
    expect(driftChange(drift([]), drift(talos))).toEqual({ appeared: talos });
    expect(driftChange(undefined, drift(talos))).toEqual({ appeared: talos });
    expect(driftChange(drift(talos), drift(talos))).toBeUndefined();
    expect(driftChange(drift(talos), drift([]))).toEqual({ cleared: talos });
    expect(driftChange(drift(talos), errorVerdict())).toBeUndefined();
    expect(driftChange(drift(talos), drift(undefined))).toBeUndefined();
  });
});
