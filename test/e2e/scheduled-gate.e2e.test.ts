import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';

let h: Harness;
let redis: Redis;

beforeAll(async () => {
  // A gate every second: the scheduler's ticks come quickly, and the test counts them instead of waiting on the clock.
  h = await startHarness({ inventory: { extra: { production: { schedules: { healthGate: { cron: '* * * * * *' } } } } } });
  redis = new Redis(h.redis.url, { maxRetriesPerRequest: null });
});

afterAll(async () => {
  redis?.disconnect();
  await h?.stop();
});

/** Scheduled gates that finished on production so far, as the bot counts them toward the daily summary. */
async function runs(): Promise<number> {
  return Number((await redis.hget('talos:schedule:gate-runs:production', 'runs')) ?? 0);
}

/** Waits until `more` further scheduled gates have finished. */
async function gatesRun(more: number): Promise<void> {
  const target = (await runs()) + more;
  for (let seen = await runs(); seen < target; seen = await runs()) await new Promise((resolve) => setTimeout(resolve, 100));
}

const scheduledPosts = (): string[] => h.slack.channelMessages(CHANNELS.production).map((m) => m.text).filter((t) => t.includes('Scheduled health gate'));

async function nextPost(count: number): Promise<string> {
  return h.slack.waitFor(() => scheduledPosts()[count - 1], { timeoutMs: 30_000, description: `scheduled gate post #${count}` });
}

describe('the scheduled health gate of production, through the real bot', () => {
  it('posts the first verdict, then only when the verdict changes', async () => {
    // Healthy: the first verdict is posted, the next gates say nothing.
    expect(await nextPost(1)).toMatch(/^✅ Scheduled health gate of production passes\./);
    await gatesRun(3);
    expect(scheduledPosts()).toHaveLength(1);

    // A node goes NotReady: one post.
    h.sim.faults.set('production', { nodeNotReady: ['10.0.30.13'] });
    expect(await nextPost(2)).toMatch(/^❌ Scheduled health gate of production now fails \(passing since .*\)\. Stop: /);
    const failing = h.slack.channelMessages(CHANNELS.production).find((m) => m.text === scheduledPosts()[1])!;
    await h.slack.waitFor(() => h.slack.thread(CHANNELS.production, failing.ts).find((r) => r.text.startsWith('❌ Kubernetes nodes')), { timeoutMs: 10_000, description: 'the failed check in the thread' });

    // Still failing the same way: nothing new.
    await gatesRun(3);
    expect(scheduledPosts()).toHaveLength(2);

    // The node is back: one post.
    h.sim.faults.clear('production');
    expect(await nextPost(3)).toMatch(/^✅ Scheduled health gate of production passes again \(failing on .*nodes.* since /);
    await gatesRun(2);
    expect(scheduledPosts()).toHaveLength(3);
  });
});
