/**
 * `npm run chaos`: many full production Talos upgrades, each with one seeded fault, and the
 * invariants checked after each. Each fault strikes at a state of the run (a talosctl call of the
 * operation held by the simulator until the fault is in force, or the people waiting at the next
 * button), never at a time, so it always meets the live operation: a run whose fault did not
 * strike is printed as NOT-STRUCK and is a finding, like a broken invariant.
 *
 * - `CHAOS_RUNS`: runs whose fault struck, default 200;
 * - `CHAOS_MAX_RUNS`: runs started at most, struck or not, default `CHAOS_RUNS`;
 * - `CHAOS_SEED`: seed of the first run (run i uses seed + i, struck or not), default from the
 *   clock, printed; `CHAOS_SEED=<seed> CHAOS_RUNS=1` replays one run's fault (and, should it
 *   not strike this time, goes on with the next seeds);
 * - `CHAOS_FAULT`: only this fault;
 * - `CHAOS_SCENARIO`: `upgrade` (the production Talos upgrade) or `replace` (a failed control plane replaced) for every run
 *   that is not a rehearsal; default: upgrades, with every `CHAOS_REPLACE_EVERY`-th run (default 5) a replacement;
 * - `CHAOS_LANES`: harnesses side by side, default 2 (one per core);
 * - `CHAOS_RUNS_PER_HARNESS`: runs before a harness is replaced by a fresh one, default 25;
 * - `CHAOS_VERBOSE=1`: every run's trace, not only a failing run's;
 * - `CHAOS_RESTORE_EVERY`: every n-th run is an etcd restore rehearsal on a three-control-plane staging instead
 *   (its own invariants: never a second `bootstrap --recover-from`, never a reset without two approvers), default 10.
 *
 * A fault that acts on a node's upgrade (`node-not-ready`, `silent-revert`) runs in upgrades only.
 *
 * Exits 1 when any invariant broke or any fault did not strike, else 3 when fewer than `CHAOS_RUNS` runs struck within `CHAOS_MAX_RUNS`.
 */
import { ChaosBench, runChaos, SCENARIOS, type Scenario } from './chaos-run.ts';
import { RESTORE_FAULTS, runRestoreChaos } from './restore-run.ts';
import { FAULT_NAMES, faultsFor, type FaultName } from './faults.ts';
import { runSeed } from './prng.ts';
import { formatRun, formatSummary, Tally } from './summary.ts';

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
const maxRuns = positiveInt('CHAOS_MAX_RUNS', runs);
const lanes = positiveInt('CHAOS_LANES', 2);
const runsPerHarness = positiveInt('CHAOS_RUNS_PER_HARNESS', 25);
const baseSeed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) >>> 0 : Date.now() % 1_000_000;
const verbose = process.env.CHAOS_VERBOSE === '1';
const restoreEvery = positiveInt('CHAOS_RESTORE_EVERY', 10);
const only = process.env.CHAOS_FAULT as FaultName | undefined;
const replaceEvery = positiveInt('CHAOS_REPLACE_EVERY', 5);
const scenario =
  process.env.CHAOS_SCENARIO === undefined || process.env.CHAOS_SCENARIO === '' ? undefined : (process.env.CHAOS_SCENARIO as Scenario);
if (scenario !== undefined && !SCENARIOS.includes(scenario)) {
  process.stderr.write(`CHAOS_SCENARIO must be one of ${SCENARIOS.join(', ')}, got ${JSON.stringify(scenario)}\n`);
  process.exit(2);
}
if (only !== undefined && !FAULT_NAMES.includes(only)) {
  process.stderr.write(`CHAOS_FAULT must be one of ${FAULT_NAMES.join(', ')}, got ${JSON.stringify(only)}\n`);
  process.exit(2);
}
/** Whether a replacement can meet the fault: one acting on a node's upgrade cannot, as it upgrades no node. */
const replaceable = only === undefined || faultsFor({ nodes: [], approvals: 1, upgrades: false }).includes(only);
if (scenario === 'replace' && !replaceable) {
  process.stderr.write(`CHAOS_FAULT=${only} acts on a node's upgrade, which a replacement never does: use CHAOS_SCENARIO=upgrade\n`);
  process.exit(2);
}

process.stdout.write(
  `chaos (${scenario ?? `upgrades, every ${replaceEvery}th a replacement, every ${restoreEvery}th an etcd restore rehearsal`}): ${runs} runs whose fault strikes (at most ${maxRuns} runs) from CHAOS_SEED=${baseSeed}${only ? ` (only ${only})` : ''} on ${lanes} harness lane(s)\n`,
);
const started = Date.now();
const tally = new Tally({ wanted: runs, maxRuns });

const benches: ChaosBench[] = [];
// Interrupted: stop the harnesses, so no bot or redis-server outlives the runner.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stdout.write(`\nchaos: ${signal}, stopping after ${tally.reports.length} runs\n`);
    void Promise.all(benches.map((b) => b.close())).finally(() => process.exit(130));
  });
}

async function lane(): Promise<void> {
  const bench = new ChaosBench({ runsPerHarness });
  benches.push(bench);
  try {
    for (let index = tally.next(); index !== undefined; index = tally.next()) {
      const seed = runSeed(baseSeed, index);
      // The rehearsal's runs take their faults from their own list; a single fault outside it runs upgrades only.
      const rehearsal =
        index % restoreEvery === restoreEvery - 1 && (only === undefined || (RESTORE_FAULTS as readonly string[]).includes(only));
      const kind: Scenario = scenario ?? (index % replaceEvery === replaceEvery - 1 && replaceable ? 'replace' : 'upgrade');
      const report = rehearsal
        ? await runRestoreChaos({ seed, fault: only })
        : await runChaos(bench, { seed, fault: only, scenario: kind });
      tally.record(report);
      process.stdout.write(formatRun(report, verbose));
    }
  } finally {
    await bench.close();
  }
}

await Promise.all(Array.from({ length: lanes }, () => lane()));

const seconds = (Date.now() - started) / 1000;
const { reports } = tally;
process.stdout.write(formatSummary(tally, { wanted: runs, maxRuns, only }));
process.stdout.write(
  `${reports.length} runs in ${Math.floor(seconds / 60)}m${Math.round(seconds % 60)}s (${(seconds / Math.max(1, reports.length)).toFixed(1)}s per run)\n`,
);
const violations = reports.reduce((n, r) => n + r.violations.length, 0);
const missed = reports.filter((r) => !r.strike.struck);
if (missed.length > 0)
  process.stdout.write(
    `NOT STRUCK: ${missed.length} run(s) whose fault never met the operation, though each strikes at a state of the run: a bug in the bot or the driver; replay with CHAOS_SEED=<seed> CHAOS_RUNS=1 (seeds ${missed.map((r) => `${r.seed}(${r.fault})`).join(' ')})\n`,
  );
process.exit(violations > 0 || missed.length > 0 ? 1 : tally.short ? 3 : 0);
