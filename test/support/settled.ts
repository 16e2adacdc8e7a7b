import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { OPS_QUEUE, READ_QUEUE } from '../../src/queue/job-schemas.ts';
import type { Harness } from './harness.ts';

/** The scheduled reconciler: always delayed, it comes and goes on its own and is no one's request. */
const SCHEDULED_JOBS = new Set(['ops-reconcile']);

/** Job states of work not done yet; completed and failed jobs only count towards activity. */
const LIVE_STATES = ['active', 'waiting', 'prioritized', 'waiting-children', 'delayed'] as const;

export interface SettleOptions {
  /** How long to wait before failing with what was still going on, in ms. Default 60000. */
  timeoutMs?: number;
  /** The pause between the two looks that must both find the bot idle and agree, in ms. Default 150. */
  intervalMs?: number;
  /** A delayed job due within this is waited for; a later one (an approval's expiry) is not, in ms. Default 10000. */
  dueWithinMs?: number;
}

interface Look {
  /** What is still going on, one line each; empty when the bot is idle. */
  busy: string[];
  /** Counters of everything the bot has done so far; equal in two looks when nothing happened in between. */
  activity: string;
}

/**
 * Waits until the bot has finished reacting to what the test sent: every delivery acked, every
 * command acked empty answered through its response_url, no Slack request of the bot in flight,
 * no talosctl or tofu call running, and no job waiting, active, prioritized or due soon in either
 * queue. Two looks a short pause apart must both find that, with no new ack, Slack call,
 * response_url call, CLI call or finished job in between, so a job that queues another, or a
 * handler between its ack and its next request, is not taken for idle.
 *
 * Only then is "nothing happened" worth asserting: anything the bot did in reaction is done
 * and stays visible, instead of being still on its way when the assertion runs.
 */
export async function waitForSettled(h: Pick<Harness, 'redis' | 'slack' | 'sim'>, options: SettleOptions = {}): Promise<void> {
  const { timeoutMs = 60_000, intervalMs = 150, dueWithinMs = 10_000 } = options;
  const deadline = Date.now() + timeoutMs;
  const redis = new Redis(h.redis.url, { maxRetriesPerRequest: 1 });
  const queues = [READ_QUEUE, OPS_QUEUE].map((name) => new Queue(name, { connection: redis }));
  try {
    let previous: Look | undefined;
    for (;;) {
      const look = await lookAt(h, queues, Date.now() + dueWithinMs);
      if (look.busy.length === 0 && previous?.busy.length === 0 && look.activity === previous.activity) return;
      if (Date.now() >= deadline) {
        const what =
          look.busy.length > 0 ? look.busy.join('; ') : 'it kept acting (new acks, Slack calls, CLI calls or finished jobs between looks)';
        throw new Error(`the bot did not settle within ${timeoutMs} ms: ${what}`);
      }
      previous = look;
      await sleep(intervalMs);
    }
  } finally {
    await Promise.all(queues.map((q) => q.close()));
    await redis.quit().catch(() => undefined);
  }
}

async function lookAt(h: Pick<Harness, 'slack' | 'sim'>, queues: Queue[], dueBy: number): Promise<Look> {
  const busy: string[] = [];
  const finished: number[] = [];
  for (const queue of queues) {
    for (const state of LIVE_STATES) {
      const jobs = (await queue.getJobs([state])).filter(
        (job) => !SCHEDULED_JOBS.has(job.name) && (state !== 'delayed' || job.timestamp + job.delay <= dueBy),
      );
      if (jobs.length > 0) busy.push(`${queue.name} has ${state} jobs: ${jobs.map((j) => j.name).join(', ')}`);
    }
    const counts = await queue.getJobCounts('completed', 'failed');
    finished.push((counts.completed ?? 0) + (counts.failed ?? 0));
  }
  const outstanding = h.slack.outstanding();
  if (outstanding.deliveries > 0) busy.push(`${outstanding.deliveries} delivery(ies) to the bot not acked`);
  if (outstanding.requests > 0) busy.push(`${outstanding.requests} request(s) of the bot to Slack not answered`);
  if (outstanding.replies > 0)
    busy.push(`${outstanding.replies} slash command(s) acked empty and not yet answered through the response_url`);
  const running = h.sim.calls.filter((c) => c.endedAt === undefined);
  if (running.length > 0) busy.push(`CLI calls still running: ${running.map((c) => `${c.bin} ${c.argv.join(' ')}`).join(', ')}`);
  const { slack, sim } = h;
  const activity = JSON.stringify([
    slack.acks.length,
    slack.ackTimeouts.length,
    slack.apiCalls.length,
    slack.responseUrlCalls.length,
    sim.calls.length,
    finished,
  ]);
  return { busy, activity };
}
