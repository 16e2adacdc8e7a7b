import { describe, expect, it } from 'vitest';
import { evaluateTalosHealth } from '../../src/health/rules/talos-health.ts';
import type { HealthReport } from '../../src/talos/parse-health.ts';

describe('evaluateTalosHealth', () => {
  it('passes and counts the checks', () => {
    const parsed: HealthReport = {
      discoveredNodes: ['10.0.30.11', '10.0.30.12'],
      checks: [
        { name: 'etcd to be healthy', result: 'OK' },
        { name: 'kube-proxy to report ready', result: 'SKIP' },
        { name: 'all k8s nodes to report schedulable', result: 'OK' },
      ],
    };

    expect(evaluateTalosHealth(parsed, 0)).toEqual({
      id: 'talos-health',
      title: 'talosctl health',
      status: 'passed',
      summary: 'all 3 checks passed (1 skipped)',
      evidence: ['discovered nodes: 10.0.30.11, 10.0.30.12', '2 checks OK, skipped: kube-proxy to report ready'],
    });
  });

  it('fails on a nonzero exit with the pending check and its last error', () => {
    const parsed: HealthReport = {
      checks: [
        {
          name: 'etcd to be healthy',
          result: 'pending',
          lastError: '1 error occurred:\n* 10.5.0.2: service "etcd" not in expected state "Running": current state [Preparing] Running pre state',
        },
      ],
      finalError: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded',
    };

    const result = evaluateTalosHealth(parsed, 1);

    expect(result.status).toBe('failed');
    expect(result.summary).toBe(
      'talosctl health failed waiting for etcd to be healthy: 10.5.0.2: service "etcd" not in expected state "Running": current state [Preparing] Running pre state',
    );
    expect(result.evidence).toContain('talosctl: rpc error: code = DeadlineExceeded desc = context deadline exceeded');
  });

  it('fails on a nonzero exit without checks, quoting the final error', () => {
    const result = evaluateTalosHealth({ checks: [], finalError: 'rpc error: code = Unavailable desc = connection refused' }, 1);

    expect(result.summary).toBe('talosctl health exited with 1: rpc error: code = Unavailable desc = connection refused');
  });

  it('fails on exit 0 when a check never reported OK (truncated output)', () => {
    const result = evaluateTalosHealth({ checks: [{ name: 'etcd to be healthy', result: 'OK' }, { name: 'apid to be ready', result: 'pending' }] }, 0);

    expect([result.status, result.summary]).toEqual(['failed', 'talosctl health exited 0 but apid to be ready never reported OK']);
  });

  it('fails on exit 0 without any check', () => {
    expect(evaluateTalosHealth({ checks: [], discoveredNodes: [] }, 0).status).toBe('failed');
  });
});
