import type { CheckResult } from './check-result.ts';
import type { ClusterConfig } from '../config/inventory.ts';
import { pollUntil, systemClock, type Clock } from '../time/clock.ts';
import { runHealthGate, type GateDeps, type GateReport } from './health-gate.ts';
import { againstBaseline, type Baseline } from './baseline.ts';

export interface SettleOptions {
  /** How long failures that waiting may clear (`settling` checks) get to clear, in ms. */
  settleMs: number;
  /** Interval between runs while waiting, in ms. */
  pollMs: number;
  /** The clock the window is measured on. Default the system's. */
  clock?: Clock;
  /**
   * What was already unwell before the operation, and the nodes it just changed: only regressions
   * fail, and what was already failing is not waited for. None (an operation planned by an earlier version): every failure counts.
   */
  baseline?: { baseline: Baseline | undefined; nodes: readonly string[] };
}

/**
 * The runbook's final verification ("Cilium is healthy, Flux is ready, and application probes
 * pass"), after each node and at the end: the gate in `final` mode. While the only failures are
 * ones waiting may clear (pods starting, Cilium agents coming up, Flux reconciling), only those
 * checks run again every `pollMs` (they read the Kubernetes API; the talosctl probes are not
 * forked again for nothing), for at most `settleMs`; once they pass, the whole gate runs again
 * and its verdict counts. A failure waiting cannot clear stops at once; what is still settling
 * when the window ends stops with the window named. With `settle.baseline`, every run is judged
 * against it: what was already failing before the operation neither fails nor is waited for. `gate`
 * runs one health gate (default {@link runHealthGate}; tests pass a scripted one). It judges no drain:
 * the nodes it follows are already drained and back, and each drain is judged just before it
 * (`checkDrain`), so budgets that allow no disruption are shown as warnings here, never as a stop.
 */
export async function runFinalVerification(
  cluster: ClusterConfig,
  deps: Omit<GateDeps, 'mode' | 'drainNodes'>,
  settle: SettleOptions,
  gate: (cluster: ClusterConfig, deps: GateDeps) => Promise<GateReport> = runHealthGate,
): Promise<GateReport> {
  const clock = settle.clock ?? systemClock;
  const deadline = clock.now().getTime() + settle.settleMs;
  const window = settle.settleMs < 1000 ? `${settle.settleMs} ms` : `${Math.round(settle.settleMs / 1000)} s`;
  const settling = (failed: CheckResult[]): boolean => failed.length > 0 && failed.every((c) => c.settling === true);
  const judged = (report: GateReport): GateReport =>
    settle.baseline === undefined ? report : againstBaseline(report, settle.baseline.baseline, settle.baseline.nodes);
  for (;;) {
    const report = judged(await gate(cluster, { ...deps, drainNodes: [], mode: 'final' }));
    let failed = report.checks.filter((c) => c.status === 'failed');
    if (report.passed || failed.some((c) => c.settling !== true)) return report;
    // Poll the settling checks alone until they pass, a failure that waiting cannot clear appears, or the window ends;
    // a poll that would end past the window is not started.
    const timeoutMs = Math.max(0, deadline - settle.pollMs + 1 - clock.now().getTime());
    const polled = await pollUntil(
      clock,
      { timeoutMs, intervalMs: settle.pollMs, ...(deps.signal ? { signal: deps.signal } : {}) },
      async (attempt) => {
        if (attempt > 1)
          failed = judged(await gate(cluster, { ...deps, drainNodes: [], mode: 'final', only: failed.map((c) => c.id) })).checks.filter(
            (c) => c.status === 'failed',
          );
        return settling(failed) ? { done: false, pending: failed.map((c) => c.id).join(', ') } : { done: true, value: undefined };
      },
    );
    if (!polled.ok) {
      const latest = new Map(failed.map((c) => [c.id, c]));
      const checks = report.checks.map((c) => latest.get(c.id) ?? c);
      return {
        ...report,
        passed: false,
        checks,
        stopReasons: failed.map((c) => `still not ready after the ${window} settle window: ${c.summary}`),
      };
    }
  }
}
