import { afterAll, describe, expect, it } from 'vitest';
import { ChaosBench, runChaos } from './chaos-run.ts';
import { FAULT_NAMES } from './faults.ts';

// One harness for the whole file: each run puts the estate back, as `npm run chaos` does.
const bench = new ChaosBench({ runsPerHarness: FAULT_NAMES.length });

afterAll(async () => {
  await bench.close();
});

describe('a production Talos upgrade keeps its invariants under each kind of fault', () => {
  for (const [i, fault] of FAULT_NAMES.entries()) {
    it(`${fault}`, { timeout: 240_000 }, async () => {
      const report = await runChaos(bench, { seed: 7_000 + i, fault });

      expect({ fault: report.fault, violations: report.violations, trace: report.violations.length > 0 ? report.trace : [] }).toEqual({ fault, violations: [], trace: [] });
      expect(['completed', 'stopped']).toContain(report.outcome);
    });
  }
});
