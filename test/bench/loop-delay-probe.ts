/**
 * Loaded into a process under benchmark with `NODE_OPTIONS=--import=<this file>`: samples the
 * process's event-loop delay (perf_hooks `monitorEventLoopDelay`) and writes its percentiles to
 * `BENCH_LOOP_DELAY_FILE` every 100 ms, in the bot (`src/entry.ts`) or the bare app only. The write is
 * asynchronous and one at a time: a synchronous write would block the very loop it measures when the disk is busy. SIGUSR2 starts a new window (the histogram is reset).
 * Does nothing without `BENCH_LOOP_DELAY_FILE`, so the bot runs as it always does.
 */
import { writeFile } from 'node:fs/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** The sampling timer's period, in ms: each sample is this period plus the delay, so the period is taken off. */
export const RESOLUTION_MS = 10;

const file = process.env.BENCH_LOOP_DELAY_FILE;
// NODE_OPTIONS reaches every Node process the bot starts (the simulator's talosctl and tofu wrappers): only the app samples.
// The bot starts at src/entry.ts, which loads src/main.ts in the same process. Without this handler SIGUSR2 would end the process.
const app = /(src\/(entry|main)|bare-bolt-app)\.ts$/.test(process.argv[1] ?? '');
if (file && app) {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  process.on('SIGUSR2', () => histogram.reset());
  const delay = (ns: number): number => Math.max(0, ns / 1e6 - RESOLUTION_MS);
  let writing = false;
  setInterval(() => {
    if (writing) return;
    const snapshot = {
      at: Date.now(),
      samples: histogram.count,
      p50: delay(histogram.percentile(50)),
      p99: delay(histogram.percentile(99)),
      max: delay(histogram.max),
    };
    writing = true;
    void writeFile(file, JSON.stringify(snapshot))
      .catch(() => undefined)
      .finally(() => {
        writing = false;
      });
  }, 100).unref();
}
