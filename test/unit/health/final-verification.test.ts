import { describe, expect, it } from 'vitest';
import type { CheckResult, UnwellItem } from '../../../src/health/check-result.ts';
import type { ClusterConfig } from '../../../src/config/inventory.ts';
import { runFinalVerification } from '../../../src/health/final-verification.ts';
import type { GateDeps, GateReport } from '../../../src/health/health-gate.ts';
import type { KubeApi } from '../../../src/kube/kube-api.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';

const CLUSTER = { name: 'production' } as ClusterConfig;
const DEPS = { talosctl: {} as Talosctl, kube: {} as KubeApi, probeTimeoutMs: 1000 };

function check(id: string, status: CheckResult['status'], settling?: boolean): CheckResult {
  return { id, title: id, status, summary: `${id} ${status}`, evidence: [], ...(settling === undefined ? {} : { settling }) };
}

function report(checks: CheckResult[]): GateReport {
  const failed = checks.filter((c) => c.status === 'failed');
  return {
    cluster: 'production',
    passed: failed.length === 0,
    stopReasons: failed.map((c) => c.summary),
    checks,
    startedAt: '',
    durationMs: 1,
    slowestProbeMs: 1,
  };
}

/** A gate that answers the scripted reports in turn (the last one from then on), recording the mode and the checks it was asked for. */
function scripted(...reports: GateReport[]): {
  gate: (cluster: ClusterConfig, deps: GateDeps) => Promise<GateReport>;
  modes: (string | undefined)[];
  asked: string[];
} {
  const modes: (string | undefined)[] = [];
  const asked: string[] = [];
  return {
    modes,
    asked,
    gate: (_cluster, deps) => {
      modes.push(deps.mode);
      asked.push(deps.only === undefined ? 'all' : deps.only.join(','));
      return Promise.resolve(reports[Math.min(modes.length - 1, reports.length - 1)]!);
    },
  };
}

describe('runFinalVerification', () => {
  it('judges no drain: every gate it runs is told that no drain follows, so a budget at 0 is never a stop here', async () => {
    const drains: (readonly string[] | undefined)[] = [];
    const gate = (_cluster: ClusterConfig, deps: GateDeps): Promise<GateReport> => {
      drains.push(deps.drainNodes);
      return Promise.resolve(report([check('disruption-budgets', 'warning')]));
    };

    const result = await runFinalVerification(CLUSTER, DEPS, { settleMs: 1000, pollMs: 10 }, gate);

    expect([result.passed, drains]).toEqual([true, [[]]]);
  });

  it('passes at once when the gate in final mode passes', async () => {
    const { gate, modes } = scripted(report([check('pods', 'passed'), check('cilium', 'passed')]));

    const result = await runFinalVerification(CLUSTER, DEPS, { settleMs: 1000, pollMs: 10 }, gate);

    expect([result.passed, modes]).toEqual([true, ['final']]);
  });

  it('polls only the settling checks while they settle, then runs the whole gate again, whose verdict counts', async () => {
    const { gate, modes, asked } = scripted(
      report([check('etcd-status', 'passed'), check('pods', 'failed', true), check('cilium', 'failed', true)]),
      report([check('pods', 'failed', true), check('cilium', 'passed')]),
      report([check('pods', 'passed')]),
      report([check('etcd-status', 'passed'), check('pods', 'passed'), check('cilium', 'passed')]),
    );

    const result = await runFinalVerification(CLUSTER, DEPS, { settleMs: 5000, pollMs: 5 }, gate);

    expect(result.passed).toBe(true);
    expect(asked).toEqual(['all', 'pods,cilium', 'pods', 'all']);
    expect(modes).toEqual(['final', 'final', 'final', 'final']);
  });

  it('stops on what the whole gate finds once the settling checks passed', async () => {
    const { gate, asked } = scripted(
      report([check('pods', 'failed', true)]),
      report([check('pods', 'passed')]),
      report([check('pods', 'passed'), check('etcd-status', 'failed')]),
    );

    const result = await runFinalVerification(CLUSTER, DEPS, { settleMs: 5000, pollMs: 5 }, gate);

    expect([result.passed, result.stopReasons, asked]).toEqual([false, ['etcd-status failed'], ['all', 'pods', 'all']]);
  });

  it('stops at once on a failure waiting cannot clear, even beside a settling one', async () => {
    const { gate, modes } = scripted(report([check('pods', 'failed', true), check('etcd-status', 'failed')]));

    const result = await runFinalVerification(CLUSTER, DEPS, { settleMs: 5000, pollMs: 5 }, gate);

    expect([result.passed, modes.length, result.stopReasons]).toEqual([false, 1, ['pods failed', 'etcd-status failed']]);
  });

  it('stops when the settle window ends, naming the window', async () => {
    const { gate, modes } = scripted(report([check('cilium', 'failed', true), check('pods', 'passed')]));

    const result = await runFinalVerification(CLUSTER, DEPS, { settleMs: 60, pollMs: 10 }, gate);

    expect(result.passed).toBe(false);
    expect(result.stopReasons).toEqual(['still not ready after the 60 ms settle window: cilium failed']);
    expect(modes.length).toBeGreaterThan(1);
    expect(result.checks.map((c) => `${c.id} ${c.status}`)).toEqual(['cilium failed', 'pods passed']);
  });

  describe('against a baseline', () => {
    const crashing = (key: string, name: string, node: string): UnwellItem => ({
      key,
      kind: 'pod',
      name,
      node,
      reason: 'CrashLoopBackOff',
      stops: true,
    });
    const old = crashing('pod:apps/ReplicaSet/web', 'apps/web-2', 'talos-w-3');
    const baseline = { takenAt: '2026-03-01T02:00:00.000Z', items: [{ ...old, name: 'apps/web-1', node: 'talos-w-2', stops: undefined }] };
    const pods = (items: UnwellItem[]): CheckResult => ({ ...check('pods', 'failed', true), unwell: items });

    it('passes at once when the only pod not ready was already failing before: the settle window is not waited out', async () => {
      const { gate, modes } = scripted(report([check('cilium', 'passed'), pods([old])]));

      const result = await runFinalVerification(
        CLUSTER,
        DEPS,
        { settleMs: 5000, pollMs: 5, baseline: { baseline, nodes: ['talos-w-1'] } },
        gate,
      );

      expect([result.passed, modes.length, result.alreadyFailing]).toEqual([true, 1, ['apps/web-2: CrashLoopBackOff on talos-w-3']]);
    });

    it('waits for a regression only, and passes once it clears while the baseline item still fails', async () => {
      const fresh = crashing('pod:apps/api-1', 'apps/api-1', 'talos-w-3');
      const { gate, asked } = scripted(report([pods([old, fresh])]), report([pods([old])]), report([pods([old])]));

      const result = await runFinalVerification(CLUSTER, DEPS, { settleMs: 5000, pollMs: 5, baseline: { baseline, nodes: [] } }, gate);

      expect([result.passed, asked]).toEqual([true, ['all', 'pods', 'all']]);
    });

    it('stops after the window on a regression, naming only it', async () => {
      const fresh = crashing('pod:apps/api-1', 'apps/api-1', 'talos-w-3');
      const { gate } = scripted(report([pods([old, fresh])]));

      const result = await runFinalVerification(CLUSTER, DEPS, { settleMs: 40, pollMs: 10, baseline: { baseline, nodes: [] } }, gate);

      expect(result.passed).toBe(false);
      expect(result.stopReasons).toHaveLength(1);
      expect(result.stopReasons[0]).toMatch(/^still not ready after the 40 ms settle window: .*apps\/api-1: CrashLoopBackOff on talos-w-3/);
      expect(result.stopReasons[0]).not.toContain('apps/web-2');
    });

    it('stops on the baseline item itself when it is on the node just upgraded', async () => {
      const here = crashing('pod:apps/ReplicaSet/web', 'apps/web-5', 'talos-w-1');
      const { gate } = scripted(report([pods([here])]));

      const result = await runFinalVerification(
        CLUSTER,
        DEPS,
        { settleMs: 40, pollMs: 10, baseline: { baseline, nodes: ['talos-w-1'] } },
        gate,
      );

      expect(result.passed).toBe(false);
      expect(result.stopReasons[0]).toContain('apps/web-5: CrashLoopBackOff on talos-w-1 (on a node just changed');
    });
  });
});
