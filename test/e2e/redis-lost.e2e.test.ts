import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { requestUpgrade } from '../support/upgrade-flow.ts';

// Redis loses the bot's data while it runs (a FLUSHALL): each replica notices it on its own poll, each
// cluster's channel is told once, and every command and button that would change something is refused.

let h: Harness;
let client: Redis | undefined;

afterEach(async () => {
  client?.disconnect();
  client = undefined;
  await h?.stop();
});

const told = (channel: string) => h.slack.channelMessages(channel).filter((m) => /the bot lost what it kept in Redis/.test(m.text));
const noticed = (logs: Record<string, unknown>[]) =>
  logs.some((l) => l.level === 50 && typeof l.msg === 'string' && l.msg.includes('Redis lost the data the bot keeps'));

describe('Redis emptied under a running bot', () => {
  it('is noticed by the poll of each replica, told once in each cluster channel, and every change is refused', async () => {
    // Arrange: two replicas polling every second, and a plan waiting for its Start.
    h = await startHarness({ env: { REDIS_EPOCH_CHECK_SECONDS: '1' } });
    const second = await h.secondBot();
    await second.start();
    await h.slack.waitForConnections(2);
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11');
    client = new Redis(h.redis.url, { maxRetriesPerRequest: 1 });

    // Act
    await client.flushall();

    // Assert: both replicas saw it by their own checks (nothing asked /readyz), and each channel was told, once.
    await h.slack.waitFor(() => noticed(h.bot.logLines()) && noticed(second.logLines()), {
      timeoutMs: 60_000,
      description: 'both replicas noticing the loss',
    });
    const production = await h.slack.waitFor(() => told(CHANNELS.production)[0], { timeoutMs: 60_000, description: 'production told' });
    await h.slack.waitFor(() => told(CHANNELS.staging)[0], { timeoutMs: 60_000, description: 'staging told' });
    const text = JSON.stringify(production.blocks);
    expect(text).toContain('*What it no longer knows:* which operations were running or waiting on production');
    expect(text).toContain('who holds its cluster lock, and which approvals were given');
    expect(text).toContain('a new operation');
    expect(text).toContain('REDIS_EPOCH_RESEED=true');
    expect(text).toContain('the epoch is missing since this process started');
    // What it read instead: the gate, run now, in the announcement's thread.
    const reading = await h.slack.waitFor(
      () => h.slack.thread(CHANNELS.production, production.ts).find((m) => m.text.startsWith('*Read now on production:*')),
      {
        timeoutMs: 60_000,
        description: 'the reading of production after the loss',
      },
    );
    expect(reading.text).toBe('*Read now on production:* ✅ health gate passed.');
    const read = JSON.stringify(reading.blocks);
    expect(read).toMatch(/Talos v\d+\.\d+\.\d+; Kubernetes v\d+\.\d+\.\d+\./);
    expect(read).toContain(`Talos ${h.sim.node('production', '10.0.30.11').talosVersion}; Kubernetes v`);
    expect(read).toMatch(/• talosctl etcd status \([^)]*\): passed, leader [0-9a-f]+ on [\d.]+; 3\/3 members agree/);

    // A mutating command is refused in its answer, and nothing is stored.
    const answer = await h.command('upgrade talos v1.12.11');
    expect(answer).toMatch(/^Redis lost the data the bot keeps: .*Nothing was changed\./);
    expect(answer).toContain('REDIS_EPOCH_RESEED=true');
    // The Start of the plan posted before the flush is refused the same way.
    await h.slack.clickButton({ user: USERS.alice, channel: CHANNELS.production, messageTs: plan.root.ts, actionId: 'talos-op-start' });
    const refusal = await h.slack.waitFor(
      () => h.slack.ephemerals(CHANNELS.production, USERS.alice).find((e) => e.text.startsWith('Redis lost the data the bot keeps')),
      { description: 'the refusal of Start' },
    );
    expect(refusal.text).toContain('Nothing was changed.');
    expect(await client.keys('talos:op:*')).toEqual([]);
    expect(h.sim.upgradeCount('production', '10.0.30.11')).toBe(0);
    // Told once per channel, by one replica, whatever the polls since.
    const tellers = [h.bot, second].map(
      (b) => b.logLines().filter((l) => l.msg === 'the loss of Redis data was told in the cluster channel').length,
    );
    expect(tellers.reduce((a, b) => a + b, 0)).toBe(2);
    expect([told(CHANNELS.production).length, told(CHANNELS.staging).length]).toEqual([1, 1]);
    expect(await client.exists('talos:epoch-lost:production', 'talos:epoch-lost:staging')).toBe(2);
  }, 180_000);
});
