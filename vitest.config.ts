import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/support/longest-first.ts';

// The compile cache every Node process of this run shares (test/support/compile-cache.ts): one per
// run, so it never grows from run to run nor is written by two checkouts at once; gone at the end.
if (process.env.TALOS_TEST_COMPILE_CACHE === undefined) {
  const dir = join(tmpdir(), `talos-chatops-compile-cache-${process.pid}`);
  process.env.TALOS_TEST_COMPILE_CACHE = dir;
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
}

export default defineConfig({
  test: {
    pool: 'forks',
    // End-to-end files mostly wait: for a simulated reboot, a lock to lapse, Slack's backoff. Measured on
    // two cores, two workers kept them 46% busy; a third worker ran the same files in three quarters of
    // the time. More than three left little to gain and crowds the timings the bot is given.
    maxWorkers: 3,
    // A clean clone has no record of the last run: start the longest files first from committed figures.
    sequence: { sequencer: LongestFirst },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      // `npm run test:quick`: no external program (no redis-server, promtool, kustomize, openssl, no child bot).
      // Unit tests hold no process state between files, so one worker runs them all: seconds instead of a minute.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false } },
      { extends: true, test: { name: 'system', include: ['test/**/*.test.ts'], exclude: ['test/unit/**'] } },
    ],
  },
});
