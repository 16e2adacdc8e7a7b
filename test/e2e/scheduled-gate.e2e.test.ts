import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';

let h: Harness;
let redis: Redis;

beforeAll(async () => {
  // A gate every second: the scheduler's ticks come quickly, and the test counts them instead of waiting on the clock.
  h = await startHarness({
    inventory: {
      extra: {
        production: { schedules: { healthGate: { cron: '* * * * * *' } } },
        staging: { schedules: { snapshot: { cron: '* * * * * *', keepLast: 2 } } },
      },
    },
  });
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

const scheduledPosts = (): string[] =>
  h.slack
    .channelMessages(CHANNELS.production)
    .map((m) => m.text)
    .filter((t) => t.includes('Scheduled health gate'));

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
    expect(await nextPost(2)).toMatch(/^❌ Scheduled health gate of production now fails \(passing since .*\)\. Blocking: /);
    const failing = h.slack.channelMessages(CHANNELS.production).find((m) => m.text === scheduledPosts()[1])!;
    await h.slack.waitFor(() => h.slack.thread(CHANNELS.production, failing.ts).find((r) => r.text.startsWith('❌ Kubernetes nodes')), {
      timeoutMs: 10_000,
      description: 'the failed check in the thread',
    });

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

describe('scheduled etcd snapshots of staging, through the real bot', () => {
  it('takes one on every tick, keeps the newest two with their checksums, records each pruning in the day thread, and touches no other file', async () => {
    // Arrange: files the bot did not write, beside the ones it will.
    const dir = h.sim.cluster('staging').snapshotDir;
    await mkdir(dir, { recursive: true });
    const foreign = [
      'operator-copy.db',
      'staging-20200101T000000Z-rev1.db.part',
      'staging-old-backup.db',
      'production-20200101T000000Z-rev1.db',
    ];
    for (const f of foreign) await writeFile(join(dir, f), 'not a snapshot of the schedule');

    // Act: wait for the thread to record a few snapshots.
    const root = await h.slack.waitFor(
      () => h.slack.channelMessages(CHANNELS.staging).find((m) => m.text.startsWith('🗄️ Scheduled etcd snapshots of staging')),
      {
        timeoutMs: 30_000,
        description: 'the day thread of scheduled snapshots',
      },
    );
    const replies = await h.slack.waitFor(
      () => {
        const done = h.slack.thread(CHANNELS.staging, root.ts).filter((r) => r.text.startsWith('✅ etcd snapshot'));
        return done.length >= 4 ? done : undefined;
      },
      { timeoutMs: 30_000, description: 'four scheduled snapshots' },
    );

    // Assert
    expect(replies[0]!.text).toMatch(/^✅ etcd snapshot `staging-\d{8}T\d{6}Z-rev\d+` .*; nothing pruned \(keepLast 2; 1 kept\)\.$/);
    // From the third on, each run prunes the one that fell out of the newest two.
    expect(replies[2]!.text).toMatch(/; pruned 1 \(keepLast 2; 2 kept\): `staging-\d{8}T\d{6}Z-rev\d+\.db`\.$/);
    expect(replies.every((r) => /\(keepLast 2; [12] kept\)/.test(r.text))).toBe(true);
    // The thread holds one message in the channel per day, and nothing else of the schedule.
    expect(h.slack.channelMessages(CHANNELS.staging).filter((m) => m.text.includes('snapshot'))).toHaveLength(1);
    // The schedule goes on ticking: the directory is judged between two ticks, when the last one has pruned and written its checksum.
    const ownFiles = (names: string[]): string[] => names.filter((f) => /^staging-\d{8}T\d{6}Z-rev\d+\.db(\.sha256)?$/.test(f));
    const between = (names: string[]): boolean => {
      const dbs = ownFiles(names).filter((f) => f.endsWith('.db'));
      return dbs.length <= 2 && dbs.every((db) => names.includes(`${db}.sha256`));
    };
    let files = await readdir(dir);
    for (const deadline = Date.now() + 20_000; !between(files) && Date.now() < deadline; files = await readdir(dir))
      await new Promise((r) => setTimeout(r, 20));
    const ours = ownFiles(files);
    expect(ours.filter((f) => f.endsWith('.db')).length).toBeLessThanOrEqual(2);
    for (const db of ours.filter((f) => f.endsWith('.db'))) expect(files).toContain(`${db}.sha256`);
    const pruned = replies.flatMap((r) => [...r.text.matchAll(/`(staging-\d{8}T\d{6}Z-rev\d+\.db)`/g)].map((m) => m[1]!));
    expect(pruned.length).toBeGreaterThanOrEqual(2);
    for (const gone of pruned) expect(files).not.toContain(gone);
    expect(files).toEqual(expect.arrayContaining(foreign));
  });
});
