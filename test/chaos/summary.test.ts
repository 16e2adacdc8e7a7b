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
      notStruck: 1,
      violations: 1,
    });
    expect(rows.find((r) => r.fault === 'slack-429')).toEqual({
      fault: 'slack-429',
      struck: 0,
      completed: 0,
      stopped: 0,
      notStruck: 1,
      violations: 0,
    });
    expect(rows.at(-1)).toEqual({ fault: 'total', struck: 2, completed: 1, stopped: 1, notStruck: 2, violations: 1 });
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
      'fault           struck  completed  stopped  not-struck  violations',
      'bot-kill        1       1          0        1           0',
      'total           1       1          0        1           0',
    ]);
    expect(summary).toContain(
      '1 run(s) whose fault struck count toward CHAOS_RUNS=1; 1 run(s) whose fault did not strike were not counted',
    );
    expect(summary.some((l) => l.startsWith('SHORT'))).toBe(false);
  });
});
