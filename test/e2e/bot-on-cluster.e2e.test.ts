import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { requestUpgrade } from '../support/upgrade-flow.ts';

// The bot's pod runs on production's third control plane (schedulable, as production's control
// planes are), as the downward API tells it: BOT_NODE_NAME is a simulated Node of production, and
// BOT_HOST_IP an address of no managed node, so the node name alone decides. Staging is not its
// cluster: its snapshots go on.
const NODE = 'talos-prd-cp-3';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    env: { BOT_NODE_NAME: NODE, BOT_HOST_IP: '10.0.50.21', BOT_POD_IP: '10.244.2.9' },
    inventory: {
      extra: {
        // A snapshot every second on both: the scheduler's ticks come quickly, and the test waits for replies, not for time.
        production: { schedules: { snapshot: { cron: '* * * * * *', keepLast: 2 } } },
        staging: { schedules: { snapshot: { cron: '* * * * * *', keepLast: 2 } } },
      },
    },
  });
});

afterAll(async () => {
  await h?.stop();
});

/** The talosctl calls that would have written a snapshot of `cluster`. */
const snapshotCalls = (cluster: string): string[][] =>
  h.sim.calls.filter((c) => c.bin === 'talosctl' && c.cluster === cluster && c.argv.includes('snapshot')).map((c) => c.argv);

/** The replies of the day thread of `cluster`'s scheduled snapshots. */
async function scheduledReplies(channel: string, cluster: string, startsWith: string, count: number): Promise<string[]> {
  const root = await h.slack.waitFor(
    () => h.slack.channelMessages(channel).find((m) => m.text.startsWith(`🗄️ Scheduled etcd snapshots of ${cluster}`)),
    { timeoutMs: 30_000, description: `the day thread of ${cluster}'s scheduled snapshots` },
  );
  return h.slack.waitFor(
    () => {
      const replies = h.slack
        .thread(channel, root.ts)
        .map((r) => r.text)
        .filter((t) => t.startsWith(startsWith));
      return replies.length >= count ? replies : undefined;
    },
    { timeoutMs: 30_000, description: `${count} scheduled snapshot replies of ${cluster}` },
  );
}

describe('a bot that runs on a node of the cluster it manages', () => {
  it('takes no scheduled snapshot of that cluster and says why, while the other cluster keeps its snapshots', async () => {
    // Act: let the schedule tick on both clusters.
    const refused = await scheduledReplies(CHANNELS.production, 'production', '❌', 2);
    const taken = await scheduledReplies(CHANNELS.staging, 'staging', '✅ etcd snapshot', 2);

    // Assert: production's replies name the node and the fix; nothing was asked of etcd, nothing written.
    expect(refused[0]).toContain(`the bot runs on ${NODE}, a node of production (BOT_NODE_NAME ${NODE})`);
    expect(refused[0]).toContain('would stay on the cluster it is meant to rescue');
    expect(refused[0]).toContain('Run the bot outside production');
    expect(snapshotCalls('production')).toEqual([]);
    const dir = h.sim.cluster('production').snapshotDir;
    expect(existsSync(dir) ? (await readdir(dir)).filter((f) => f.endsWith('.db')) : []).toEqual([]);
    // Staging's snapshots were taken and written.
    expect(taken[0]).toMatch(/^✅ etcd snapshot `staging-\d{8}T\d{6}Z-rev\d+`/);
    expect(snapshotCalls('staging').length).toBeGreaterThanOrEqual(2);
  });

  it('refuses /talos snapshot in its preflight, recording why', async () => {
    // Act
    const ack = await h.command('snapshot', { user: USERS.alice, channel: CHANNELS.production });
    const opId = /op-[a-z0-9]+/.exec(ack)![0];
    const root = await h.slack.waitFor(
      () => h.slack.channelMessages(CHANNELS.production).find((m) => m.text.includes(opId) && m.text.startsWith('❌')),
      { timeoutMs: 30_000, description: `the refused snapshot ${opId}` },
    );

    // Assert
    const op = await storedOperation(h, opId);
    expect(op.state).toBe('refused');
    expect(op.snapshot).toBeUndefined();
    expect(op.refusals).toHaveLength(1);
    expect(op.refusals[0]).toMatch(new RegExp(`^the bot runs on ${NODE}, a node of production \\(BOT_NODE_NAME ${NODE}\\): `));
    expect(op.audit.map((e) => e.event)).toContain('preflight refused');
    expect(root.text).toContain(`the bot runs on ${NODE}`);
    expect(snapshotCalls('production')).toEqual([]);
  });

  it('refuses a Talos upgrade in its preflight, before anything is touched, naming the fix', async () => {
    // Act
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11');

    // Assert
    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('refused');
    // The only refusal: from a bot on the cluster, nothing else is checked, planned or downloaded.
    expect(op.refusals).toHaveLength(1);
    const refusal = op.refusals[0];
    expect(refusal).toMatch(new RegExp(`^the bot runs on ${NODE}, a node of production`));
    expect(refusal).toContain('nothing that needs one starts');
    expect(refusal).toContain('another snapshotDir is not enough');
    expect(JSON.stringify(plan.root.blocks)).not.toContain('talos-op-start');
    // Staging's scheduled snapshots go on meanwhile: only production's calls count.
    expect(
      h.sim.calls
        .slice(since)
        .filter((c) => c.bin === 'talosctl' && c.cluster === 'production' && /upgrade|snapshot/.test(c.argv.join(' '))),
    ).toEqual([]);
  });

  it('is told by /talos doctor: production fails naming the node, staging passes', async () => {
    // Act
    const report = await h.command('doctor', { user: USERS.alice, channel: CHANNELS.production });

    // Assert
    const lines = report.split('\n');
    const production = lines.find((l) => l.includes('*Where the bot runs · production*'));
    expect(production).toMatch(new RegExp(`^⛔ \\*Where the bot runs · production\\*: the bot runs on ${NODE}, a node of production`));
    expect(production).toContain('*Fix:* run the bot outside production');
    const staging = lines.find((l) => l.includes('*Where the bot runs · staging*'));
    expect(staging).toMatch(/^✅ /);
    expect(staging).toContain(`node ${NODE}, host IP 10.0.50.21, pod IP 10.244.2.9, none of the nodes of staging`);
  });
});
