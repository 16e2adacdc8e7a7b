import { describe, expect, it } from 'vitest';
import type { RunReport } from './chaos-run.ts';
import type { FaultName } from './faults.ts';
import { formatRun, formatSummary, summarize, Tally } from './summary.ts';

function report(fault: FaultName, struck: boolean, extra: Partial<RunReport> = {}): RunReport {
  return {
    seed: 1,
    fault,
    plan: 'start+10ms down=100ms',
    strike: struck
      ? { struck: true, how: 'the bot was killed 1.0 s into the operation' }
      : { struck: false, why: 'the bot was killed 2.0 s after the operation ended' },
    opId: 'op-abc123',
    outcome: 'completed',
    reason: undefined,
    violations: [],
    durationMs: 1000,
    trace: [],
    resetProblem: undefined,
    transient: true,
    retries: 0,
    noRetryOffered: false,
    ...extra,
  };
}

describe('the tally of chaos runs', () => {
  it('starts another run for each run whose fault did not strike', () => {
    const tally = new Tally({ wanted: 2, maxRuns: 10 });

    const first = tally.next();
    const second = tally.next();
    const third = tally.next();
    tally.record(report('bot-kill', true));
    tally.record(report('bot-kill', false));
    const fourth = tally.next();
    tally.record(report('bot-kill', true));

    expect([first, second, third, fourth, tally.next()]).toEqual([0, 1, undefined, 2, undefined]);
    expect({ struck: tally.struck, runs: tally.reports.length, short: tally.short }).toEqual({ struck: 2, runs: 3, short: false });
  });

  it('stops at the limit of runs, short of the runs wanted', () => {
    const tally = new Tally({ wanted: 2, maxRuns: 2 });
    for (let i = tally.next(); i !== undefined; i = tally.next()) tally.record(report('slack-429', false));

    expect({ struck: tally.struck, runs: tally.reports.length, short: tally.short }).toEqual({ struck: 0, runs: 2, short: true });
  });

  it('counts outcomes of struck runs only, and violations of every run', () => {
    const violation = { invariant: 'audit-thread' as const, detail: '#2 is posted more than once' };
    const rows = summarize([
      report('bot-kill', true),
      report('bot-kill', true, { outcome: 'stopped' }),
      report('bot-kill', false, { violations: [violation] }),
      report('slack-429', false),
    ]);

    expect(rows.find((r) => r.fault === 'bot-kill')).toEqual({
      fault: 'bot-kill',
      struck: 2,
      completed: 1,
      stopped: 1,
      afterRetry: 0,
      noRetryOffered: 0,
      notStruck: 1,
      violations: 1,
    });
    expect(rows.find((r) => r.fault === 'slack-429')).toEqual({
      fault: 'slack-429',
      struck: 0,
      completed: 0,
      stopped: 0,
      afterRetry: 0,
      noRetryOffered: 0,
      notStruck: 1,
      violations: 0,
    });
    expect(rows.at(-1)).toEqual({
      fault: 'total',
      struck: 2,
      completed: 1,
      stopped: 1,
      afterRetry: 0,
      noRetryOffered: 0,
      notStruck: 2,
      violations: 1,
    });
  });

  it('prints whether each run struck, and how many runs counted', () => {
    const tally = new Tally({ wanted: 1, maxRuns: 3 });
    tally.next();
    tally.record(report('bot-kill', false));
    tally.next();
    tally.record(report('bot-kill', true));

    expect(formatRun(tally.reports[0]!, false).split('\n').slice(0, 2)).toEqual([
      'seed=1 fault=bot-kill NOT-STRUCK outcome=completed violations=0  [start+10ms down=100ms; op-abc123; 1.0s]',
      '  not struck, not counted: the bot was killed 2.0 s after the operation ended',
    ]);
    expect(formatRun(tally.reports[1]!, false)).toContain('  struck: the bot was killed 1.0 s into the operation\n');
    const summary = formatSummary(tally, { wanted: 1, maxRuns: 3, only: 'bot-kill' }).split('\n');
    expect(summary.slice(1, 4)).toEqual([
      'fault             struck  completed  after-retry  stopped  no-retry  not-struck  violations',
      'bot-kill          1       1          0            0        0         1           0',
      'total             1       1          0            0        0         1           0',
    ]);
    expect(summary).toContain(
      '1 run(s) whose fault struck count toward CHAOS_RUNS=1; 1 run(s) whose fault did not strike were not counted',
    );
    expect(summary.some((l) => l.startsWith('SHORT'))).toBe(false);
  });

  it('counts the runs completed after a Retry, and apart those a transient fault stopped where no Retry was offered', () => {
    const tally = new Tally({ wanted: 5, maxRuns: 5 });
    const runs = [
      report('bot-kill', true, { seed: 11, retries: 1 }),
      report('bot-kill', true, { seed: 12, retries: 2 }),
      report('redis-restart', true, { seed: 13, outcome: 'stopped', noRetryOffered: true }),
      // A lasting fault's stop is its end, Retry or not.
      report('silent-revert', true, { seed: 14, outcome: 'stopped', transient: false, noRetryOffered: true }),
      report('talosctl-fail', true, { seed: 15 }),
    ];
    for (const run of runs) {
      tally.next();
      tally.record(run);
    }

    const rows = summarize(tally.reports);
    expect(rows.find((r) => r.fault === 'bot-kill')).toMatchObject({ completed: 2, afterRetry: 2, noRetryOffered: 0 });
    expect(rows.find((r) => r.fault === 'redis-restart')).toMatchObject({ stopped: 1, noRetryOffered: 1 });
    expect(rows.find((r) => r.fault === 'silent-revert')).toMatchObject({ stopped: 1, noRetryOffered: 0 });
    expect(rows.at(-1)).toMatchObject({ completed: 3, afterRetry: 2, stopped: 2, noRetryOffered: 1 });
    const summary = formatSummary(tally, { wanted: 5, maxRuns: 5, only: undefined }).split('\n');
    expect(summary).toContain('completed after a Retry: 2 of 3 completed run(s)');
    expect(summary.find((l) => l.startsWith('stopped, no retry offered:'))).toBe(
      'stopped, no retry offered: 1 run(s) stopped by a transient fault where no Retry is offered (not violations; once every stop offers Retry this must be 0): seeds 13(redis-restart)',
    );
    expect(formatRun(tally.reports[1]!, false).split('\n')[0]).toContain('outcome=completed retries=2 violations=0');
    expect(formatRun(tally.reports[2]!, false)).toContain('  stopped, no retry offered: the fault was transient');
    expect(formatRun(tally.reports[3]!, false)).not.toContain('no retry offered');
  });

  it('says so when no run was left stopped without a Retry', () => {
    const tally = new Tally({ wanted: 1, maxRuns: 1 });
    tally.next();
    tally.record(report('slack-5xx', true));

    expect(formatSummary(tally, { wanted: 1, maxRuns: 1, only: undefined }).split('\n')).toEqual(
      expect.arrayContaining(['completed after a Retry: 0 of 1 completed run(s)', 'stopped, no retry offered: 0']),
    );
  });
});
