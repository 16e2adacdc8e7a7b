import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGate } from '../support/gate-run.ts';
import { startHarness, USERS, type Harness } from '../support/harness.ts';
import { approveUntilDone, clickStart, requestUpgrade } from '../support/upgrade-flow.ts';

// A maintenance channel that is private, as Slack treats it: the bot does not see it until it is
// invited, and reads its threads with groups:history, the scope the manifest asks for.

const PRIVATE = 'G0MAINTSTG';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    extraChannels: [{ id: PRIVATE, name: 'maint-staging', isPrivate: true, botMember: false }],
    inventory: { channels: { staging: PRIVATE } },
  });
});

afterAll(async () => {
  await h?.stop();
});

describe('a private maintenance channel', () => {
  it('gets nothing from the bot before it is invited: Slack answers channel_not_found', async () => {
    // Act
    await h.command('health', { channel: PRIVATE });
    const refused = await h.slack.waitFor(() => h.slack.apiCalls.find((c) => c.args.channel === PRIVATE && c.error !== undefined), {
      timeoutMs: 30_000,
      description: "the bot's first post in the private channel",
    });

    // Assert
    expect(refused).toMatchObject({ method: 'chat.postMessage', error: 'channel_not_found' });
    expect(h.slack.channelMessages(PRIVATE)).toEqual([]);
  });

  it('works once the bot is invited: a health gate, and a Talos upgrade from plan to maintenance record', async () => {
    // Arrange: someone runs /invite @talos in the channel.
    h.slack.setBotMember(PRIVATE, true);

    // Act
    const { root: gate, evidence } = await runGate(h, PRIVATE);
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11', { channel: PRIVATE });
    await clickStart(h, plan, USERS.alice, PRIVATE);
    const done = await approveUntilDone(h, plan, PRIVATE);
    const record = await h.slack.waitFor(
      () => h.slack.uploadedFiles().find((f) => f.channel === PRIVATE && f.filename === `${plan.opId}-maintenance-record.md`),
      {
        timeoutMs: 30_000,
        description: 'the maintenance record',
      },
    );

    // Assert
    expect(gate.text).toContain('Health gate passed: staging');
    expect(evidence).toContain('Health gate passed on staging');
    expect(done.text).toContain('completed');
    expect(record.thread_ts).toBe(plan.root.ts);
    const privateCalls = h.slack.apiCalls.filter((c) => c.args.channel === PRIVATE || c.args.channel_id === PRIVATE);
    expect(privateCalls.filter((c) => c.error === 'missing_scope')).toEqual([]);
  });
});
