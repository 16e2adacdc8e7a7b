import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { evaluateTalosHealth } from '../../../../src/health/rules/talos-health.ts';
import type { HealthReport } from '../../../../src/talos/parse-health.ts';

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
          lastError:
            '1 error occurred:\n* 10.5.0.2: service "etcd" not in expected state "Running": current state [Preparing] Running pre state',
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
    const result = evaluateTalosHealth(
      {
        checks: [
          { name: 'etcd to be healthy', result: 'OK' },
          { name: 'apid to be ready', result: 'pending' },
        ],
      },
      0,
    );

    expect([result.status, result.summary]).toEqual(['failed', 'talosctl health exited 0 but apid to be ready never reported OK']);
  });

  it('fails on exit 0 without any check', () => {
    expect(evaluateTalosHealth({ checks: [], discoveredNodes: [] }, 0).status).toBe('failed');
  });

  describe('on a 1.13 server whose Talos installed no CNI', () => {
    const skipped: HealthReport = {
      discoveredNodes: ['10.0.30.11'],
      checks: [
        { name: 'etcd to be healthy', result: 'OK' },
        { name: 'all k8s nodes to report ready', result: 'SKIP' },
        { name: 'kube-proxy to report ready', result: 'SKIP' },
        { name: 'coredns to report ready', result: 'SKIP' },
        { name: 'all k8s nodes to report schedulable', result: 'OK' },
      ],
    };
    const dns = (ready: boolean, name: string): V1Pod => ({
      metadata: { namespace: 'kube-system', name, labels: { 'k8s-app': 'kube-dns' } },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
    });

    it('judges CoreDNS itself through Kubernetes, since Talos skipped it', () => {
      const result = evaluateTalosHealth(skipped, 0, { pods: [dns(true, 'coredns-1'), dns(false, 'coredns-2')] });

      expect([result.status, result.summary]).toEqual([
        'failed',
        'talosctl health skipped its CoreDNS check, and CoreDNS is not ready: CoreDNS ready on 1 of 2 pods',
      ]);
      expect(result.evidence).toContain(
        'Talos skipped "all k8s nodes to report ready" (no CNI installed by Talos): node readiness is judged by the Kubernetes nodes check',
      );
    });

    it('passes when CoreDNS is ready on every pod', () => {
      const result = evaluateTalosHealth(skipped, 0, { pods: [dns(true, 'coredns-1'), dns(true, 'coredns-2')] });

      expect(result.status).toBe('passed');
      expect(result.evidence).toContain(
        'Talos skipped "coredns to report ready" (no CNI installed by Talos); through Kubernetes: CoreDNS ready',
      );
    });

    it('fails where no CoreDNS pod exists', () => {
      expect(evaluateTalosHealth(skipped, 0, { pods: [] }).summary).toBe(
        'talosctl health skipped its CoreDNS check, and CoreDNS is not ready: no CoreDNS pod (kube-system, k8s-app=kube-dns)',
      );
    });
  });

  it('names the wait timeout when the final error is the deadline, whatever the healthcheck prefix', () => {
    const parsed: HealthReport = {
      checks: [
        { name: 'all k8s nodes to report schedulable', result: 'pending', lastError: 'some nodes are not schedulable: [talos-prd-cp-2]' },
      ],
      finalError: 'healthcheck error: rpc error: code = DeadlineExceeded desc = context deadline exceeded',
      finalErrorCode: 'DeadlineExceeded',
      finalErrorCause: 'context deadline exceeded',
    };

    expect(evaluateTalosHealth(parsed, 1).summary).toBe(
      'talosctl health failed waiting for all k8s nodes to report schedulable: some nodes are not schedulable: [talos-prd-cp-2] (its --wait-timeout ran out)',
    );
  });
});
