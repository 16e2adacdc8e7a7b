import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from './harness.ts';
import { waitForSettled } from './settled.ts';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.stop();
});

const gateResults = (): number =>
  h.slack.channelMessages(CHANNELS.production).filter((m) => /Health gate (passed|failed)/.test(m.text)).length;

describe('waitForSettled', () => {
  it('returns only once the job a command queued has run and posted its result', async () => {
    // Arrange
    const results = gateResults();
    const calls = h.sim.calls.length;

    // Act
    const delivery = await h.slack.sendSlashCommand({ user: USERS.alice, channel: CHANNELS.production, text: 'health' });
    await waitForSettled(h);

    // Assert
    expect(delivery.timedOut).toBe(false);
    expect(gateResults()).toBe(results + 1);
    expect(h.sim.calls.length).toBeGreaterThan(calls);
  });

  it('returns only once a command acked empty has been answered through its response_url', async () => {
    // Arrange
    const replies = h.slack.responseUrlCalls.length;

    // Act
    const delivery = await h.slack.sendSlashCommand({ user: USERS.alice, channel: CHANNELS.production, text: 'status' });
    await waitForSettled(h);

    // Assert
    expect(delivery).toMatchObject({ timedOut: false, payload: {} });
    expect(h.slack.responseUrlCalls.length).toBe(replies + 1);
  });

  it('fails, naming what is still going on, while the bot cannot finish', async () => {
    // Arrange: the gate's result cannot be posted while chat.postMessage is held.
    const held = h.slack.faults.hold({ methods: ['chat.postMessage'] });
    await h.slack.sendSlashCommand({ user: USERS.alice, channel: CHANNELS.production, text: 'health' });

    // Act
    const settling = waitForSettled(h, { timeoutMs: 3_000 });

    // Assert
    await expect(settling).rejects.toThrow(/^the bot did not settle within 3000 ms: .*request\(s\) of the bot to Slack not answered/);
    held.release();
    await waitForSettled(h);
  });
});
