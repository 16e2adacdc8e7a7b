import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createGateSummaryJob, createScheduledGateJob } from '../../../jobs/scheduled-gate-job.ts';
import type { CheckResult } from '../../../src/health/check-result.ts';
import type { GateReport } from '../../../src/health/health-gate.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { createClusterLock } from '../../../src/ops/cluster-lock.ts';
import { createRunningGates } from '../../../src/ops/running-gate.ts';
import { createScheduledGateState } from '../../../src/ops/scheduled-gate-state.ts';
import { inventory, RecordingChat } from '../../support/engine-fixture.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();

const SCHEDULED = inventory(`    schedules:
      healthGate: { cron: "*/15 * * * *", dailySummary: "08:00" }`);

function report(failed: string[]): GateReport {
  const checks: CheckResult[] = ['talos-version', 'nodes', 'flux'].map((id) => ({
    id,
    title: id,
    status: failed.includes(id) ? 'failed' : 'passed',
    summary: `${id} ${failed.includes(id) ? 'failed' : 'ok'}`,
    evidence: [],
  }));
  return {
    cluster: 'production',
    passed: failed.length === 0,
    stopReasons: failed.map((f) => `${f} failed`),
    checks,
    startedAt: '2026-12-01T08:00:00.000Z',
    durationMs: 5,
    slowestProbeMs: 5,
  };
}

/** The scheduled gate's processor with a controlled gate and clock; each tick is a job of its own, as the scheduler adds them. */
function fixture() {
  const chat = new RecordingChat();
  const client = redis.client();
  const state = createScheduledGateState(client);
  const runningGates = createRunningGates(client, { ttlMs: 60_000 });
  const lock = createClusterLock(client);
  let next: GateReport | Error = report([]);
  let clock = new Date('2026-12-01T08:00:00.000Z');
  const logger = createLogger({ level: 'silent', scrubber: new SecretScrubber() });
  const deps = {
    inventory: SCHEDULED,
    chat,
    logger,
    state,
    runningGates,
    lock,
    clock: { now: () => clock },
    runGate: () => (next instanceof Error ? Promise.reject(next) : Promise.resolve(next)),
  };
  const gate = createScheduledGateJob(deps);
  let tick = 0;
  return {
    chat,
    state,
    runningGates,
    lock,
    /** One scheduled tick, 15 minutes after the last, whose gate finds `result`. */
    async tick(result: GateReport | Error) {
      next = result;
      clock = new Date(clock.getTime() + 15 * 60_000);
      tick += 1;
      return gate({ id: `repeat:sched-gate-production:${tick}`, data: { cluster: 'production' }, attemptsStarted: 1 } as unknown as Job);
    },
    summary: createGateSummaryJob(deps),
    /** Root messages in the channel, in order. */
    roots: () => chat.posts.filter((p) => p.threadTs === undefined).map((p) => p.message.text),
  };
}

describe('a scheduled health gate', () => {
  it('posts the first verdict, then only when the verdict changes, with one reply per check', async () => {
    // Arrange
    const f = fixture();

    // Act
    await f.tick(report([]));
    await f.tick(report([]));
    await f.tick(report(['nodes']));
    await f.tick(report(['nodes']));
    await f.tick(report(['nodes', 'flux']));
    await f.tick(report([]));
    await f.tick(report([]));

    // Assert
    const roots = f.roots();
    expect(roots).toHaveLength(4);
    expect(roots[0]).toMatch(/^✅ Scheduled health gate of production passes\./);
    expect(roots[1]).toMatch(/^❌ Scheduled health gate of production now fails \(passing since .*\)\. Blocking: nodes failed$/);
    expect(roots[2]).toMatch(/^❌ Scheduled health gate of production still fails, on other checks now \(failing on nodes since /);
    expect(roots[3]).toMatch(/^✅ Scheduled health gate of production passes again \(failing on flux, nodes since /);
    const failing = f.chat.posts.find((p) => p.message.text === roots[1]);
    expect(f.chat.thread(failing!.ts)).toEqual(['✅ talos-version: talos-version ok', '❌ nodes: nodes failed', '✅ flux: flux ok']);
  });

  it('stores the last verdict in Redis with when it last changed, so another replica judges the next tick alike', async () => {
    const f = fixture();
    await f.tick(report([]));
    await f.tick(report(['flux']));
    await f.tick(report(['flux']));

    const stored = await f.state.last('production');

    expect(stored).toEqual({
      verdict: { passed: false, failing: ['flux'] },
      changedAt: '2026-12-01T08:30:00.000Z',
      lastRunAt: '2026-12-01T08:45:00.000Z',
    });
    const fresh = fixture();
    expect(await fresh.tick(report(['flux']))).toEqual({ passed: false, posted: false });
  });

  it('counts a gate that could not run as a failure of its own, posted once', async () => {
    const f = fixture();
    await f.tick(report([]));
    await f.tick(new Error('tofu output failed: backend unreachable'));
    await f.tick(new Error('tofu output failed: another text'));

    expect(f.roots()).toEqual([
      expect.stringContaining('passes'),
      expect.stringMatching(/^❌ Scheduled health gate could not run on production: tofu output failed: backend unreachable/),
    ]);
  });

  it('never runs while a requested gate runs on the cluster: the tick is skipped and says nothing', async () => {
    const f = fixture();
    await f.runningGates.claim('production', { job: 'health-1', requestedBy: 'U0ALICE' });

    const result = await f.tick(report(['nodes']));

    expect(result).toEqual({ skipped: 'gate-running' });
    expect(f.chat.posts).toEqual([]);
    expect(await f.runningGates.get('production')).toEqual({ job: 'health-1', requestedBy: 'U0ALICE' });
  });

  it('says once per operation that one holds the cluster, posts no flip while it does, and judges against the verdict before it', async () => {
    // Arrange
    const f = fixture();
    await f.tick(report([]));
    await f.lock.acquire('production', 'op-upgrade1');

    // Act: a drained, rebooting node fails the gate while the upgrade runs
    const during = [await f.tick(report(['nodes'])), await f.tick(report(['nodes'])), await f.tick(report([]))];
    await f.lock.release('production', 'op-upgrade1');
    const after = await f.tick(report([]));
    await f.lock.acquire('production', 'op-upgrade2');
    const second = await f.tick(report(['nodes']));
    await f.lock.release('production', 'op-upgrade2');
    const failing = await f.tick(report(['flux']));

    // Assert
    expect(during).toEqual([
      { skipped: 'operation-running', posted: true },
      { skipped: 'operation-running', posted: false },
      { skipped: 'operation-running', posted: false },
    ]);
    expect(after).toEqual({ passed: true, posted: false });
    expect(second).toEqual({ skipped: 'operation-running', posted: true });
    expect(failing).toEqual({ passed: false, posted: true });
    const roots = f.roots();
    expect(roots).toHaveLength(4);
    expect(roots[1]).toMatch(
      /^⏸ Operation op-upgrade1 holds production: the scheduled health gate does not judge it until the operation ends/,
    );
    expect(roots[1]).toContain('(passing since');
    expect(roots[2]).toMatch(/^⏸ Operation op-upgrade2 holds production/);
    expect(roots[3]).toMatch(/^❌ Scheduled health gate of production now fails \(passing since .*08:15 UTC>\)\. Blocking: flux failed$/);
    expect(await f.state.announcedHold('production')).toBe('op-upgrade2');
    expect(await f.state.last('production')).toMatchObject({ verdict: { passed: false, failing: ['flux'] } });
  });

  it('posts a daily summary with the verdict, its last change and the runs since the last summary', async () => {
    const f = fixture();
    await f.tick(report([]));
    await f.tick(report(['nodes']));
    await f.tick(report(['nodes']));

    await f.summary({ id: 'repeat:sched-summary-production:1', data: { cluster: 'production' }, attemptsStarted: 1 } as unknown as Job);
    await f.summary({ id: 'repeat:sched-summary-production:2', data: { cluster: 'production' }, attemptsStarted: 1 } as unknown as Job);

    const summaries = f.roots().filter((t) => t.startsWith('📋'));
    expect(summaries[0]).toMatch(
      /^📋 Daily health summary of production: ❌ failing on nodes since .*2026-12-01 08:30 UTC>, last run .*08:45 UTC>; 3 scheduled gates since the last summary, 2 failed\.$/,
    );
    expect(summaries[1]).toMatch(/; 0 scheduled gates since the last summary, 0 failed\.$/);
  });
});
