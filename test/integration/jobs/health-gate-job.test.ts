import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createHealthGateJob } from '../../../jobs/health-gate-job.ts';
import type { ClusterAccess } from '../../../src/cluster/cluster-session.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { createRunningGates, SCHEDULED_GATE } from '../../../src/ops/running-gate.ts';
import { inventory, RecordingChat } from '../../support/engine-fixture.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';
import { systemClock, type Clock } from '../../../src/time/clock.ts';

const redis = useRedisFixture();

describe('a requested health gate while the scheduled one runs', () => {
  it('waits for the scheduled gate to end, then runs and reports its own: never two at once, never a silent join', async () => {
    // Arrange
    const runningGates = createRunningGates(redis.client(), { ttlMs: 60_000 });
    // The system's clock, telling the test when the request paused between two looks at the running gate.
    let pauses = 0;
    let pausedTwice = (): void => undefined;
    const twoLooks = new Promise<void>((resolve) => (pausedTwice = resolve));
    const pausesCounted: Clock = {
      now: () => systemClock.now(),
      sleep: (ms, signal) => {
        if (++pauses === 2) pausedTwice();
        return systemClock.sleep(ms, signal);
      },
    };
    const chat = new RecordingChat();
    let sessions = 0;
    const access = {
      withSession: () => {
        sessions += 1;
        return Promise.reject(new Error('tofu output failed'));
      },
    } as unknown as ClusterAccess;
    const job = createHealthGateJob({
      inventory: inventory(),
      access,
      chat,
      logger: createLogger({ level: 'silent', scrubber: new SecretScrubber() }),
      probeTimeoutMs: 1000,
      runningGates,
      clock: pausesCounted,
    });
    await runningGates.claim('production', { job: 'repeat:sched-gate-production:1', requestedBy: SCHEDULED_GATE });
    const data = { cluster: 'production', channel: 'C0MAINTPRD', requestedBy: 'U0ALICE', requestedAt: '2026-12-01T08:00:00.000Z' };
    const fakeJob = { id: 'health-1', data, attemptsStarted: 1, updateData: () => Promise.resolve() } as unknown as Job;

    // Act
    let settled = false;
    const requested = job(fakeJob).finally(() => (settled = true));
    // The request has looked at the running gate and paused twice: it waits, it does not join.
    await twoLooks;
    const whileScheduled = { settled, sessions, posts: chat.posts.length, running: (await runningGates.get('production'))?.job };
    await runningGates.release('production', 'repeat:sched-gate-production:1');
    const result = await requested;

    // Assert
    expect(whileScheduled).toEqual({ settled: false, sessions: 0, posts: 0, running: 'repeat:sched-gate-production:1' });
    expect(result).toEqual({ passed: false });
    expect(sessions).toBe(1);
    expect(chat.posts.map((p) => p.message.text)).toEqual(['⏳ Health gate running on production, requested by <@U0ALICE>']);
    expect(chat.edits.map((e) => e.message.text)).toEqual(['❌ Health gate could not run on production: tofu output failed']);
    expect(await runningGates.get('production')).toBeUndefined();
  });
});
