import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from '../slack-emulator/index.ts';
import { waitForGate } from '../support/gate-run.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { clickStart, requestUpgrade, waitForApprovalRequest, waitForRootState } from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.stop();
});

beforeEach(() => {
  h.sim.faults.clear('production');
  h.sim.faults.clear('staging');
});

/** Slack's permalink of a message the bot posted in `channel`: the channel, then p and the ts without its dot. */
function permalink(channel: string, ts: string): string {
  return `https://talos-test.slack.com/archives/${channel}/p${ts.replace('.', '')}`;
}

/** The mrkdwn link to an operation's thread, as every message that names the operation shows it. */
function opLink(channel: string, rootTs: string, opId: string): string {
  return `<${permalink(channel, rootTs)}|${opId}>`;
}

/** The first message posted in `channel` after `before` messages whose text matches, once its thread has `replies` replies. */
async function reportIn(channel: string, before: number, pattern: RegExp, replies: number, description: string): Promise<Message> {
  return h.slack.waitFor(
    () => {
      const report = h.slack
        .channelMessages(channel)
        .slice(before)
        .find((m) => pattern.test(m.text));
      return report !== undefined && h.slack.thread(channel, report.ts).length === replies ? report : undefined;
    },
    { timeoutMs: 30_000, description },
  );
}

/** The private message the bot sent `user` in `channel` (not a command's reply) that matches. */
async function whisper(channel: string, user: string, pattern: RegExp, description: string): Promise<string> {
  const found = await h.slack.waitFor(
    () => h.slack.ephemerals(channel, user).find((e) => e.source === 'chat.postEphemeral' && pattern.test(e.text)),
    {
      timeoutMs: 30_000,
      description,
    },
  );
  return found.text;
}

/** Everything the staging channel shows anyone: its messages, their threads, and the private messages in it. */
function everythingShownIn(channel: string): string {
  const messages = h.slack.channelMessages(channel);
  const threads = messages.flatMap((m) => h.slack.thread(channel, m.ts));
  const whispers = h.slack.ephemerals(channel);
  return JSON.stringify([...messages, ...threads, ...whispers]);
}

describe('links to an operation', () => {
  it("link the held-by refusal, /talos status and /talos cancel to the operation's root, asking Slack once", async () => {
    // Arrange: a production upgrade that holds the cluster, waiting at its first approval.
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    await waitForApprovalRequest(h, plan);
    const link = opLink(CHANNELS.production, plan.root.ts, plan.opId);

    // Act
    const refusal = await h.command(`upgrade talos ${TARGET}`);
    const status = await h.command('status');
    const record = await h.command(`record ${plan.opId}`);
    const elsewhere = await h.command('status', { channel: CHANNELS.random });
    const cancelled = await h.command(`cancel ${plan.opId}`);

    // Assert
    expect(refusal).toContain(`*production* is held by ${link}; one mutating operation at a time.`);
    const state = status.split('\n').find((line) => line.startsWith('*production* — '));
    expect(state).toContain(`Talos upgrade to ${TARGET} running`);
    expect(state).toContain('waiting for approval');
    expect(state?.endsWith(` · locked by ${link}`)).toBe(true);
    // No `/talos health` ran here: the newest gate is the upgrade's own, before its snapshot, named as people name the upgrade.
    expect(status).toMatch(
      new RegExp(`\\nLast health gate: ✅ passed <!date[^>]+> · from Talos upgrade to ${TARGET.replaceAll('.', '\\.')} \\(`),
    );
    expect(status).toContain(`from Talos upgrade to ${TARGET} (${link})`);
    expect(status).toContain(`• ${link} Talos upgrade to ${TARGET} on *production*: awaiting-approval`);
    expect(record).toBe(`Posting the maintenance record of ${link} in its thread.`);
    expect(elsewhere).toContain(`*production* (<#${CHANNELS.production}>) — held by ${link}`);
    expect(cancelled).toBe(`Cancelled ${link}; *production* is free for the next operation.`);
    const asked = h.slack.callsTo('chat.getPermalink').filter((c) => c.args['message_ts'] === plan.root.ts);
    expect(asked).toHaveLength(1);
    await waitForRootState(h, plan, /cancelled/);
  });

  it("shows outside the clusters' channels only who holds each cluster: no targets, nodes or versions", async () => {
    // Act
    const elsewhere = await h.command('status', { channel: CHANNELS.random });

    // Assert
    expect(elsewhere.split('\n')).toEqual([
      `*staging* (<#${CHANNELS.staging}>) — no operation holds it`,
      `*production* (<#${CHANNELS.production}>) — no operation holds it`,
      "Each cluster's operations, with their progress, are listed by `/talos status` in its own channel.",
    ]);
  });
});

describe("reports stay in their cluster's channel", () => {
  it("posts production's health gate and readiness report asked for in staging's channel in production's, tells the requester there where, and takes a plan (which can be applied) only in production's channel", async () => {
    // Arrange
    const inProduction = h.slack.channelMessages(CHANNELS.production).length;
    const inStaging = h.slack.channelMessages(CHANNELS.staging).length;

    // Act
    const healthAck = await h.command('health production', { channel: CHANNELS.staging });
    const { root: gate } = await waitForGate(h, CHANNELS.production, inProduction);
    expect(gate.text).toMatch(/Health gate (passed|failed): production/);
    const healthLink = await whisper(CHANNELS.staging, USERS.alice, /health gate of \*production\*/, 'where the health gate is');
    const gatesAck = await h.command('gates production', { channel: CHANNELS.staging });
    const readiness = await reportIn(
      CHANNELS.production,
      inProduction,
      /Production gates of production: |could not be checked on production/,
      16,
      "production's readiness report in its channel",
    );
    const gatesLink = await whisper(CHANNELS.staging, USERS.alice, /readiness report of \*production\*/, 'where the readiness report is');
    const planAck = await h.command('plan production', { channel: CHANNELS.staging });
    await waitForSettled(h);

    // Assert
    expect(healthAck).toContain(`the verdict goes to *production*'s own channel <#${CHANNELS.production}>, and a link to it follows here`);
    expect(gatesAck).toContain(`<#${CHANNELS.production}>`);
    expect(planAck).toContain(`a Terraform plan on *production* is taken only in its maintenance channel <#${CHANNELS.production}>`);
    expect(healthLink).toContain(`<${permalink(CHANNELS.production, gate.ts)}|open it>`);
    expect(gatesLink).toContain(`<${permalink(CHANNELS.production, readiness.ts)}|open it>`);
    expect(h.slack.channelMessages(CHANNELS.production).some((m) => m.text.includes('Terraform change'))).toBe(false);
    expect(h.slack.channelMessages(CHANNELS.staging).length).toBe(inStaging);
    const shown = everythingShownIn(CHANNELS.staging);
    for (const node of h.sim.cluster('production').nodes) expect(shown).not.toContain(node.address);
  });

  it('still refuses in a channel that belongs to no cluster, and posts nothing', async () => {
    // Arrange
    const inProduction = h.slack.channelMessages(CHANNELS.production).length;

    // Act
    const refused = await h.command('health production', { channel: CHANNELS.random });
    await waitForSettled(h);

    // Assert
    expect(refused).toContain('This channel belongs to no cluster');
    expect(h.slack.channelMessages(CHANNELS.production).length).toBe(inProduction);
    expect(h.slack.channelMessages(CHANNELS.random)).toEqual([]);
  });
});

describe('a second /talos health while the gate runs', () => {
  it('joins the running gate: one root message, one talosctl health, every requester told where', async () => {
    // Arrange: `talosctl health` answers only at the probe timeout, so the gate runs for seconds.
    h.sim.faults.set('production', { hang: ['health'] });
    const before = h.slack.channelMessages(CHANNELS.production).length;
    const since = h.sim.calls.length;
    await h.command('health', { user: USERS.alice });
    const running = await h.slack.waitFor(
      () =>
        h.slack
          .channelMessages(CHANNELS.production)
          .slice(before)
          .find((m) => m.text.startsWith('⏳ Health gate running')),
      {
        description: 'the running gate',
      },
    );

    // Act
    await h.command('health', { user: USERS.bob });
    await h.command('health production', { user: USERS.dave, channel: CHANNELS.staging });
    const toBob = await whisper(CHANNELS.production, USERS.bob, /already running/, 'bob told about the running gate');
    const toDave = await whisper(CHANNELS.staging, USERS.dave, /already running/, 'dave told about the running gate');
    const finished = await waitForGate(h, CHANNELS.production, before);
    await waitForSettled(h);

    // Assert
    const link = `<${permalink(CHANNELS.production, running.ts)}|the running gate>`;
    expect(toBob).toContain(`asked by <@${USERS.alice}>`);
    expect(toBob).toContain(link);
    expect(toDave).toContain(link);
    expect(
      h.slack
        .channelMessages(CHANNELS.production)
        .slice(before)
        .map((m) => m.ts),
    ).toEqual([running.ts]);
    expect(finished.root.ts).toBe(running.ts);
    expect(h.sim.calls.slice(since).filter((c) => c.bin === 'talosctl' && c.argv[0] === 'health')).toHaveLength(1);
  });

  it('runs a new gate once the last one ended', async () => {
    // Arrange
    const before = h.slack.channelMessages(CHANNELS.production).length;

    // Act
    await h.command('health');
    const fresh = await waitForGate(h, CHANNELS.production, before);
    expect(fresh.root.text).toMatch(/Health gate passed: production/);

    // Assert: bob's, from the gate before, is still the only one told about a running gate.
    expect(h.slack.ephemerals(CHANNELS.production).filter((e) => /already running/.test(e.text))).toHaveLength(1);
  });
});
