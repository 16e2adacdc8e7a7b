/**
 * `npm run chaos`: many full production Talos upgrades, each with one seeded fault, and the
 * invariants checked after each.
 *
 * - `CHAOS_RUNS`: runs, default 200;
 * - `CHAOS_SEED`: seed of the first run (run i uses seed + i), default from the clock, printed;
 *   `CHAOS_SEED=<seed> CHAOS_RUNS=1` replays one run's fault;
 * - `CHAOS_FAULT`: only this fault;
 * - `CHAOS_LANES`: harnesses side by side, default 2 (one per core);
 * - `CHAOS_RUNS_PER_HARNESS`: runs before a harness is replaced by a fresh one, default 25;
 * - `CHAOS_VERBOSE=1`: every run's trace, not only a failing run's.
 *
 * Exits 1 when any invariant broke.
 */
import { ChaosBench, runChaos, type RunReport } from './chaos-run.ts';
import { FAULT_NAMES, type FaultName } from './faults.ts';
import { INVARIANTS } from './invariants.ts';
import { runSeed } from './prng.ts';

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    process.stderr.write(`${name} must be a positive integer, got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return value;
}

const runs = positiveInt('CHAOS_RUNS', 200);
const lanes = positiveInt('CHAOS_LANES', 2);
const runsPerHarness = positiveInt('CHAOS_RUNS_PER_HARNESS', 25);
const baseSeed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) >>> 0 : Date.now() % 1_000_000;
const verbose = process.env.CHAOS_VERBOSE === '1';
const only = process.env.CHAOS_FAULT as FaultName | undefined;
if (only !== undefined && !FAULT_NAMES.includes(only)) {
  process.stderr.write(`CHAOS_FAULT must be one of ${FAULT_NAMES.join(', ')}, got ${JSON.stringify(only)}\n`);
  process.exit(2);
}

process.stdout.write(`chaos: ${runs} runs from CHAOS_SEED=${baseSeed}${only ? ` (only ${only})` : ''} on ${lanes} harness lane(s)\n`);
const started = Date.now();
const reports: RunReport[] = [];
let next = 0;

function print(report: RunReport): void {
  const line = `seed=${report.seed} fault=${report.fault} outcome=${report.outcome} violations=${report.violations.length}`;
  process.stdout.write(`${line}  [${report.plan}; ${report.opId ?? 'no op'}; ${(report.durationMs / 1000).toFixed(1)}s]\n`);
  if (report.reason !== undefined && report.outcome !== 'completed') process.stdout.write(`  stopped: ${report.reason.slice(0, 300)}\n`);
  if (report.resetProblem !== undefined) process.stdout.write(`  note: ${report.resetProblem}\n`);
  for (const v of report.violations) process.stdout.write(`  VIOLATION ${v.invariant}: ${v.detail}\n`);
  if (report.violations.length > 0 || verbose) for (const t of report.trace) process.stdout.write(`    ${t}\n`);
}

const benches: ChaosBench[] = [];
// Interrupted: stop the harnesses, so no bot or redis-server outlives the runner.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stdout.write(`\nchaos: ${signal}, stopping after ${reports.length} runs\n`);
    void Promise.all(benches.map((b) => b.close())).finally(() => process.exit(130));
  });
}

async function lane(): Promise<void> {
  const bench = new ChaosBench({ runsPerHarness });
  benches.push(bench);
  try {
    while (next < runs) {
      const index = next++;
      const report = await runChaos(bench, { seed: runSeed(baseSeed, index), fault: only });
      reports.push(report);
      print(report);
    }
  } finally {
    await bench.close();
  }
}

await Promise.all(Array.from({ length: lanes }, () => lane()));

const seconds = (Date.now() - started) / 1000;
const pad = (s: string | number, n: number): string => String(s).padEnd(n);
const rows = [...FAULT_NAMES].map((fault) => {
  const mine = reports.filter((r) => r.fault === fault);
  return {
    fault,
    runs: mine.length,
    completed: mine.filter((r) => r.outcome === 'completed').length,
    stopped: mine.filter((r) => r.outcome !== 'completed').length,
    violations: mine.reduce((n, r) => n + r.violations.length, 0),
  };
});
const total = reports.reduce((n, r) => n + r.violations.length, 0);
process.stdout.write(`\n${pad('fault', 16)}${pad('runs', 6)}${pad('completed', 11)}${pad('stopped', 9)}violations\n`);
for (const r of rows) process.stdout.write(`${pad(r.fault, 16)}${pad(r.runs, 6)}${pad(r.completed, 11)}${pad(r.stopped, 9)}${r.violations}\n`);
process.stdout.write(`${pad('total', 16)}${pad(reports.length, 6)}${pad(rows.reduce((n, r) => n + r.completed, 0), 11)}${pad(rows.reduce((n, r) => n + r.stopped, 0), 9)}${total}\n`);
const byInvariant = INVARIANTS.map((name) => `${name}=${reports.flatMap((r) => r.violations).filter((v) => v.invariant === name).length}`);
process.stdout.write(`violations by invariant: ${byInvariant.join(' ')}\n`);
const failing = reports.filter((r) => r.violations.length > 0).map((r) => r.seed);
if (failing.length > 0) process.stdout.write(`replay a failing run with CHAOS_SEED=<seed> CHAOS_RUNS=1${only ? ` CHAOS_FAULT=${only}` : ''}; failing seeds: ${failing.join(' ')}\n`);
process.stdout.write(`${reports.length} runs in ${Math.floor(seconds / 60)}m${Math.round(seconds % 60)}s (${(seconds / Math.max(1, reports.length)).toFixed(1)}s per run)\n`);
process.exit(total > 0 ? 1 : 0);
