/**
 * Which chaos runs count, and what `npm run chaos` prints about them. A run counts toward
 * `CHAOS_RUNS` only when its fault struck the live operation; one whose fault did not strike is
 * printed as such and another run takes its place. Its violations still count: a broken
 * invariant is a bug whatever the fault did.
 */
import type { RunReport } from './chaos-run.ts';
import { FAULT_NAMES, type FaultName } from './faults.ts';
import { INVARIANTS } from './invariants.ts';

/** Hands out run indexes until `wanted` runs struck or `maxRuns` were started. */
export class Tally {
  readonly reports: RunReport[] = [];
  readonly #wanted: number;
  readonly #maxRuns: number;
  #started = 0;
  #running = 0;

  /**
   * @param options.wanted runs whose fault must strike (`CHAOS_RUNS`)
   * @param options.maxRuns runs started at most, struck or not (`CHAOS_MAX_RUNS`)
   */
  constructor(options: { wanted: number; maxRuns: number }) {
    this.#wanted = options.wanted;
    this.#maxRuns = options.maxRuns;
  }

  /** The index of the next run, or undefined when the runs that struck and those under way are enough, or no run is left. */
  next(): number | undefined {
    if (this.struck + this.#running >= this.#wanted || this.#started >= this.#maxRuns) return undefined;
    this.#running += 1;
    return this.#started++;
  }

  record(report: RunReport): void {
    this.#running -= 1;
    this.reports.push(report);
  }

  get struck(): number {
    return this.reports.filter((r) => r.strike.struck).length;
  }

  /** Fewer runs struck than wanted, and none is under way: the limit of runs was reached first. */
  get short(): boolean {
    return this.struck < this.#wanted;
  }
}

export interface SummaryRow {
  fault: FaultName | 'total';
  /** Runs whose fault struck: the ones that count. */
  struck: number;
  /** Of the runs that struck, those whose operation completed, and those it stopped (or never ended). */
  completed: number;
  stopped: number;
  /** Of the completed runs, those that completed after the driver clicked Retry at least once. */
  afterRetry: number;
  /** Of the stopped runs with a transient fault, those whose stop offered no Retry to click. */
  noRetryOffered: number;
  /** Runs whose fault never met the live operation. */
  notStruck: number;
  /** Violations in every run of the fault, struck or not. */
  violations: number;
}

/** A run whose transient fault stopped it where no Retry is offered: not a violation, but each must become a completion after Retry. */
const stoppedWithoutRetry = (r: RunReport): boolean => r.transient && r.outcome !== 'completed' && r.noRetryOffered;

export function summarize(reports: readonly RunReport[]): SummaryRow[] {
  const row = (fault: SummaryRow['fault'], mine: readonly RunReport[]): SummaryRow => {
    const struck = mine.filter((r) => r.strike.struck);
    return {
      fault,
      struck: struck.length,
      completed: struck.filter((r) => r.outcome === 'completed').length,
      stopped: struck.filter((r) => r.outcome !== 'completed').length,
      afterRetry: struck.filter((r) => r.outcome === 'completed' && r.retries > 0).length,
      noRetryOffered: struck.filter(stoppedWithoutRetry).length,
      notStruck: mine.length - struck.length,
      violations: mine.reduce((n, r) => n + r.violations.length, 0),
    };
  };
  return [
    ...FAULT_NAMES.map((fault) =>
      row(
        fault,
        reports.filter((r) => r.fault === fault),
      ),
    ),
    row('total', reports),
  ];
}

/** One run as printed while the series goes on; its trace when it broke an invariant or when `verbose`. */
export function formatRun(report: RunReport, verbose: boolean): string {
  const lines = [
    `seed=${report.seed} fault=${report.fault}${report.transient ? '' : ' (lasting)'} ${report.strike.struck ? 'struck' : 'NOT-STRUCK'} outcome=${report.outcome}${report.retries > 0 ? ` retries=${report.retries}` : ''} violations=${report.violations.length}  [${report.plan}; ${report.opId ?? 'no op'}; ${(report.durationMs / 1000).toFixed(1)}s]`,
    report.strike.struck ? `  struck: ${report.strike.how}` : `  not struck, not counted: ${report.strike.why}`,
  ];
  if (report.reason !== undefined && report.outcome !== 'completed') lines.push(`  stopped: ${report.reason.slice(0, 300)}`);
  if (stoppedWithoutRetry(report)) lines.push('  stopped, no retry offered: the fault was transient, but the stop has no Retry button');
  if (report.resetProblem !== undefined) lines.push(`  note: ${report.resetProblem}`);
  for (const v of report.violations) lines.push(`  VIOLATION ${v.invariant}: ${v.detail}`);
  if (report.violations.length > 0 || verbose) for (const t of report.trace) lines.push(`    ${t}`);
  return `${lines.join('\n')}\n`;
}

/** The table at the end of a series, and what a reader needs to act on it. */
export function formatSummary(tally: Tally, options: { wanted: number; maxRuns: number; only: FaultName | undefined }): string {
  const { reports } = tally;
  const pad = (s: string | number, n: number): string => String(s).padEnd(n);
  const rows = summarize(reports).filter((r) => options.only === undefined || r.fault === options.only || r.fault === 'total');
  const out = [
    `\n${pad('fault', 18)}${pad('struck', 8)}${pad('completed', 11)}${pad('after-retry', 13)}${pad('stopped', 9)}${pad('no-retry', 10)}${pad('not-struck', 12)}violations`,
  ];
  for (const r of rows)
    out.push(
      `${pad(r.fault, 18)}${pad(r.struck, 8)}${pad(r.completed, 11)}${pad(r.afterRetry, 13)}${pad(r.stopped, 9)}${pad(r.noRetryOffered, 10)}${pad(r.notStruck, 12)}${r.violations}`,
    );
  out.push(
    '(completed and stopped count the runs whose fault struck; after-retry: of the completed, those resumed by Retry; no-retry: of the stopped, those whose fault was transient but whose stop offered no Retry; violations count every run)',
  );
  const total = rows.at(-1)!;
  out.push(`completed after a Retry: ${total.afterRetry} of ${total.completed} completed run(s)`);
  const unresumed = reports.filter((r) => r.strike.struck && stoppedWithoutRetry(r));
  out.push(
    unresumed.length === 0
      ? 'stopped, no retry offered: 0'
      : `stopped, no retry offered: ${unresumed.length} run(s) stopped by a transient fault where no Retry is offered (not violations; once every stop offers Retry this must be 0): seeds ${unresumed.map((r) => `${r.seed}(${r.fault})`).join(' ')}`,
  );
  const notStruck = reports.length - tally.struck;
  out.push(
    `${tally.struck} run(s) whose fault struck count toward CHAOS_RUNS=${options.wanted}; ${notStruck} run(s) whose fault did not strike were not counted`,
  );
  if (tally.short)
    out.push(`SHORT: only ${tally.struck} of ${options.wanted} runs had their fault strike within CHAOS_MAX_RUNS=${options.maxRuns} runs`);
  const violations = reports.flatMap((r) => r.violations);
  out.push(
    `violations by invariant: ${INVARIANTS.map((name) => `${name}=${violations.filter((v) => v.invariant === name).length}`).join(' ')}`,
  );
  const failing = reports.filter((r) => r.violations.length > 0).map((r) => r.seed);
  if (failing.length > 0)
    out.push(
      `replay a failing run with CHAOS_SEED=<seed> CHAOS_RUNS=1${options.only ? ` CHAOS_FAULT=${options.only}` : ''}; failing seeds: ${failing.join(' ')}`,
    );
  return `${out.join('\n')}\n`;
}
