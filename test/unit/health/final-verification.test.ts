import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../../../src/health/check-result.ts';
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
});
