import { afterAll, describe, expect, it } from 'vitest';
import { ChaosBench, runChaos, type RunReport } from './chaos-run.ts';
import { FAULT_NAMES, type FaultName } from './faults.ts';
import { runRestoreChaos } from './restore-run.ts';

/** Seeds tried per fault: a run whose fault did not strike proves nothing, and the next seed is tried. */
const ATTEMPTS = 3;

// One harness for the whole file: each run puts the estate back, as `npm run chaos` does.
const bench = new ChaosBench({ runsPerHarness: FAULT_NAMES.length * ATTEMPTS });

/** The faults a control-plane replacement meets: a tool failing, the bot killed mid-step, Redis restarted, Slack failing. */
const REPLACE_FAULTS: readonly FaultName[] = ['talosctl-fail', 'bot-kill', 'redis-restart', 'slack-5xx'];

afterAll(async () => {
  await bench.close();
});

describe('a production Talos upgrade keeps its invariants under each kind of fault', () => {
  for (const [i, fault] of FAULT_NAMES.entries()) {
    it(`${fault}`, { timeout: 420_000 }, async () => {
      const reports: RunReport[] = [];
      while (reports.length < ATTEMPTS && reports.at(-1)?.strike.struck !== true) {
        reports.push(await runChaos(bench, { seed: 7_000 + i + 100 * reports.length, fault }));
      }
      const last = reports.at(-1)!;

      const broken = reports.filter((r) => r.violations.length > 0);
      expect({ violations: broken.flatMap((r) => r.violations), traces: broken.map((r) => r.trace) }).toEqual({
        violations: [],
        traces: [],
      });
      expect({
        fault: last.fault,
        strike: last.strike,
        tried: reports.map((r) => (r.strike.struck ? r.strike.how : r.strike.why)),
      }).toEqual({
        fault,
        strike: { struck: true, how: expect.any(String) },
        tried: expect.any(Array),
      });
      expect(['completed', 'stopped']).toContain(last.outcome);
    });
  }
});

describe('an etcd restore rehearsal never issues a second bootstrap --recover-from', () => {
  it.each([
    ['bot-kill', 'etcd-bootstrap'],
    ['talosctl-fail', 'reset'],
    ['slack-5xx', 'approval'],
  ] as const)('%s at %s', { timeout: 300_000 }, async (fault, moment) => {
    const report = await runRestoreChaos({ seed: 9_100, fault, moment });
    expect({ violations: report.violations, trace: report.violations.length > 0 ? report.trace : [] }).toEqual({
      violations: [],
      trace: [],
    });
    expect(report.strike.struck).toBe(true);
    expect(['completed', 'stopped']).toContain(report.outcome);
  });
});

describe('a production control-plane replacement keeps its invariants under faults', () => {
  for (const [i, fault] of REPLACE_FAULTS.entries()) {
    it(`${fault}`, { timeout: 420_000 }, async () => {
      const reports: RunReport[] = [];
      while (reports.length < ATTEMPTS && reports.at(-1)?.strike.struck !== true) {
        reports.push(await runChaos(bench, { seed: 9_000 + i + 100 * reports.length, fault, scenario: 'replace' }));
      }
      const last = reports.at(-1)!;
      // A run whose fault never met the replacement proves nothing about it.
      expect({ fault, tried: reports.map((r) => (r.strike.struck ? r.strike.how : r.strike.why)), struck: last.strike.struck }).toEqual({
        fault,
        tried: expect.any(Array),
        struck: true,
      });

      const broken = reports.filter((r) => r.violations.length > 0);
      expect({ violations: broken.flatMap((r) => r.violations), traces: broken.map((r) => r.trace) }).toEqual({
        violations: [],
        traces: [],
      });
      expect(['completed', 'stopped']).toContain(last.outcome);
    });
  }
});
