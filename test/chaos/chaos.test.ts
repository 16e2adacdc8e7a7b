import { afterAll, describe, expect, it } from 'vitest';
import { ChaosBench, runChaos } from './chaos-run.ts';
import { FAULT_NAMES, type FaultName } from './faults.ts';
import { runRestoreChaos } from './restore-run.ts';

// One harness for the whole file: each run puts the estate back, as `npm run chaos` does.
const bench = new ChaosBench({ runsPerHarness: FAULT_NAMES.length * 2 });

/** The faults a control-plane replacement meets: a tool failing, the bot killed mid-step, Redis restarted, Slack failing. */
const REPLACE_FAULTS: readonly FaultName[] = ['talosctl-fail', 'bot-kill', 'redis-restart', 'slack-5xx'];

afterAll(async () => {
  await bench.close();
});

describe('a production Talos upgrade keeps its invariants under each kind of fault', () => {
  for (const [i, fault] of FAULT_NAMES.entries()) {
    it(`${fault}`, { timeout: 300_000 }, async () => {
      const report = await runChaos(bench, { seed: 7_000 + i, fault });

      expect({ violations: report.violations, trace: report.violations.length > 0 ? report.trace : [] }).toEqual({
        violations: [],
        trace: [],
      });
      // The fault strikes at a state of the run, never at a time: a fault that did not strike is a finding.
      expect({ fault: report.fault, plan: report.plan, strike: report.strike }).toEqual({
        fault,
        plan: report.plan,
        strike: { struck: true, how: expect.any(String) },
      });
      expect(['completed', 'stopped']).toContain(report.outcome);
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
    expect({ plan: report.plan, strike: report.strike }).toEqual({ plan: report.plan, strike: { struck: true, how: expect.any(String) } });
    expect(['completed', 'stopped']).toContain(report.outcome);
  });
});

describe('a production control-plane replacement keeps its invariants under faults', () => {
  for (const [i, fault] of REPLACE_FAULTS.entries()) {
    it(`${fault}`, { timeout: 300_000 }, async () => {
      const report = await runChaos(bench, { seed: 9_000 + i, fault, scenario: 'replace' });

      // The fault strikes at a state of the replacement, never at a time: a fault that did not strike is a finding.
      expect({ fault, plan: report.plan, strike: report.strike }).toEqual({
        fault,
        plan: report.plan,
        strike: { struck: true, how: expect.any(String) },
      });
      expect({ violations: report.violations, trace: report.violations.length > 0 ? report.trace : [] }).toEqual({
        violations: [],
        trace: [],
      });
      expect(['completed', 'stopped']).toContain(report.outcome);
    });
  }
});
