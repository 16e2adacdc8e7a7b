import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION, OVERRIDE_ACTION } from '../../src/chat/buttons.ts';
import type { ButtonClickInput, Ephemeral, Message } from '../slack-emulator/index.ts';
import { postSigned, type SigningOptions } from '../slack-emulator/http-delivery.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { opIdOf } from '../support/upgrade-flow.ts';
import { stateReader, type BotState, type StateReader } from './state.ts';

const TARGET = 'v1.12.11';

let h: Harness;
let url: string;
let state: StateReader;

interface Plan {
  opId: string;
  root: Message;
  /** The Start button's value, `op-<id>.<nonce>`. */
  value: string;
  /** The block holding Start and Cancel. */
  blockId: string;
}

function startButton(message: Message | undefined): { value: string; blockId: string } | undefined {
  for (const block of (message?.blocks ?? []) as { block_id?: string; elements?: { action_id?: string; value?: string }[] }[]) {
    const button = block.elements?.find((e) => e.action_id === ACTION.start);
    if (button?.value !== undefined && block.block_id !== undefined) return { value: button.value, blockId: block.block_id };
  }
  return undefined;
}

/** `/talos upgrade talos` over HTTP, then its plan with the Start button. */
async function requestPlan(): Promise<Plan> {
  // The ack is empty; the reply naming the operation follows through the response_url.
  const seen = h.slack.ephemerals(undefined, USERS.alice).length;
  await h.slack.sendSlashCommandHttp(url, { user: USERS.alice, channel: CHANNELS.production, text: `upgrade talos ${TARGET}` });
  const opId = opIdOf((await nextEphemeral(USERS.alice, seen)).text);
  // The preflight runs the whole health gate; on a loaded machine that can take a while.
  const root = await h.slack.waitFor(
    () => h.slack.channelMessages(CHANNELS.production).find((m) => m.text.includes(opId) && /planned|refused/.test(m.text)),
    {
      timeoutMs: 90_000,
      description: `the plan of ${opId}`,
    },
  );
  if (!/planned/.test(root.text)) throw new Error(`the preflight of ${opId} refused: ${JSON.stringify(root.blocks)}`);
  const button = startButton(root);
  if (button === undefined) throw new Error(`the plan of ${opId} has no Start button`);
  return { opId, root, ...button };
}

/** The next ephemeral that `user` gets through a response URL after `seen` of them. */
function nextEphemeral(user: string, seen: number): Promise<Ephemeral> {
  return h.slack.waitFor(
    () =>
      h.slack
        .ephemerals(undefined, user)
        .slice(seen)
        .find((e) => e.source === 'response_url'),
    {
      timeoutMs: 10_000,
      description: `an ephemeral answer to ${user}`,
    },
  );
}

interface Observed {
  state: BotState;
  calls: number;
  edits: number;
  posts: number;
}

async function observe(plan: Plan): Promise<Observed> {
  return {
    state: await state.read(),
    calls: h.sim.calls.length,
    edits: h.slack.edits(CHANNELS.production, plan.root.ts).length,
    posts: h.slack.callsTo('chat.postMessage').length,
  };
}

let older: Plan;
let current: Plan;

beforeAll(async () => {
  h = await startHarness({ http: true });
  url = `http://127.0.0.1:${h.httpPort}/slack/events`;
  state = stateReader(h.redis.url);
  // An older plan, cancelled, and the current one, which an approver has cleared to start:
  // from here only the checks under test stand between a click and a running upgrade.
  older = await requestPlan();
  await h.slack.clickButtonHttp(url, {
    user: USERS.alice,
    channel: CHANNELS.production,
    messageTs: older.root.ts,
    actionId: ACTION.cancelPlan,
  });
  await h.slack.waitFor(() => /cancelled/.test(h.slack.message(CHANNELS.production, older.root.ts)?.text ?? ''), {
    description: 'the older plan cancelled',
  });
  current = await requestPlan();
  // Two approvers override the missing staging rehearsal.
  for (const [user, shown] of [
    [USERS.carol, /overridden by/],
    [USERS.dave, /and <@U0DAVE>/],
  ] as const) {
    await h.slack.clickButtonHttp(url, { user, channel: CHANNELS.production, messageTs: current.root.ts, actionId: OVERRIDE_ACTION });
    await h.slack.waitFor(() => shown.test(JSON.stringify(h.slack.message(CHANNELS.production, current.root.ts)?.blocks ?? [])), {
      description: `the override by ${user}`,
    });
  }
  await waitForSettled(h);
}, 240_000);

afterAll(async () => {
  await state?.close();
  await h?.stop();
});

describe('signed requests that do not verify', () => {
  it.each([
    ['a forged signature', { forgeSignature: true }],
    ['a timestamp ten minutes old', { staleTimestamp: true }],
    ['a timestamp from 2001', { requestTimestampSec: 1_000_000_000 }],
  ] as const)('refuses a slash command with %s: 401, no answer, nothing runs', async (_, signing: SigningOptions) => {
    // Arrange
    const before = await observe(current);
    const acks = h.slack.acks.length;

    // Act
    const response = await h.slack.sendSlashCommandHttp(url, {
      user: USERS.alice,
      channel: CHANNELS.production,
      text: 'health',
      ...signing,
    });

    // Assert
    expect(response.status).toBe(401);
    expect(h.slack.acks.length).toBe(acks);
    await waitForSettled(h);
    expect(await observe(current)).toEqual(before);
  });

  it.each([
    ['a forged signature', { forgeSignature: true }],
    ['a timestamp ten minutes old', { staleTimestamp: true }],
  ] as const)('refuses a Start click with %s: 401, and the plan stays planned', async (_, signing: SigningOptions) => {
    // Arrange
    const before = await observe(current);

    // Act
    const response = await h.slack.clickButtonHttp(url, {
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: current.root.ts,
      actionId: ACTION.start,
      ...signing,
    });

    // Assert
    expect(response.status).toBe(401);
    await waitForSettled(h);
    expect(await observe(current)).toEqual(before);
    expect((await state.operation(current.opId))?.state).toBe('planned');
  });
});

describe('buttons that do not belong to their operation, channel or message', () => {
  /** Clicks as `input` says (Start on the current plan by default) and returns the ephemeral answer. */
  async function refusedClick(input: Partial<ButtonClickInput>): Promise<string> {
    const user = input.user ?? USERS.alice;
    const before = await observe(current);
    const seen = h.slack.ephemerals(undefined, user).length;
    const response = await h.slack.clickButtonHttp(url, {
      user,
      channel: CHANNELS.production,
      messageTs: current.root.ts,
      actionId: ACTION.start,
      ...input,
    });
    expect(response.status).toBe(200);
    const reply = await nextEphemeral(user, seen);
    expect(await observe(current)).toEqual(before);
    expect((await state.operation(current.opId))?.state).toBe('planned');
    expect(h.bot.running()).toBe(true);
    return reply.text;
  }

  it('refuses a button of an operation the bot does not know', async () => {
    expect(await refusedClick({ value: 'op-zzzzzzzz.abcd1234' })).toBe(
      'This button belongs to operation `op-zzzzzzzz`, which the bot does not know. Nothing changed.',
    );
  });

  it("refuses the Start button clicked in another cluster's channel", async () => {
    expect(await refusedClick({ channel: CHANNELS.staging, value: current.value })).toBe(
      `\`${current.opId}\` belongs to *production*; its buttons work only in <#${CHANNELS.production}>. Nothing changed.`,
    );
  });

  it("refuses the Override button clicked in another cluster's channel", async () => {
    const reply = await refusedClick({ user: USERS.carol, channel: CHANNELS.staging, actionId: OVERRIDE_ACTION, value: current.value });
    expect(reply).toBe(`\`${current.opId}\`'s buttons work only in <#${CHANNELS.production}>. Nothing changed.`);
  });

  it('refuses a button of an operation whose cluster this bot does not serve', async () => {
    // Arrange: the same operation under a cluster another deployment serves, sharing this Redis.
    const op = await state.operation(current.opId);
    const foreign = { ...op, id: 'op-foreign0001', cluster: 'edge' };
    await state.redis.set('talos:op:op-foreign0001', JSON.stringify(foreign));
    const nonce = current.value.split('.')[1];

    // Act
    const reply = await refusedClick({ value: `op-foreign0001.${nonce}` });

    // Assert
    expect(reply).toBe('`op-foreign0001` belongs to *edge*, a cluster this bot does not serve. Nothing changed.');
    expect(await state.operation('op-foreign0001')).toEqual(foreign);
  });

  it.each([
    ['a wrong nonce', () => `${current.opId}.ffff0000`],
    ['the nonce of the older plan', () => `${current.opId}.${older.value.split('.')[1]!}`],
    ['a look-alike nonce', () => current.value.replace(/[a-f]/, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0))],
  ])('refuses a Start value with %s as no longer valid', async (_, value) => {
    expect(await refusedClick({ value: value() })).toMatch(
      new RegExp(
        `^(\`${current.opId}\` is planned; this Start button is no longer valid|That button carries no valid operation)\\. Nothing changed\\.$`,
      ),
    );
  });

  it.each([
    ['garbage', "'; DROP TABLE ops; --"],
    ['3000 characters', `op-aaaa1111.${'b'.repeat(2_988)}`],
    ['an empty value', ''],
    ['a second dot', 'op-aaaa1111.bbbb2222.cccc'],
    ['a newline', 'op-aaaa1111.bbbb2222\nop-cccc3333.dddd4444'],
    ['a JSON object', '{"op":"op-aaaa1111","nonce":"bbbb2222"}'],
  ])('refuses a Start value that is %s', async (_, value) => {
    expect(await refusedClick({ value })).toBe('That button carries no valid operation. Nothing changed.');
  });

  it('refuses an Override value that is 3000 characters', async () => {
    expect(await refusedClick({ user: USERS.carol, actionId: OVERRIDE_ACTION, value: 'x'.repeat(3_000) })).toBe(
      'That button belongs to no operation the bot knows. Nothing changed.',
    );
  });

  it('refuses the current Start value sent with the block of the older plan', async () => {
    const reply = await refusedClick({ value: current.value, blockId: older.blockId });
    expect(reply).toBe('That button does not belong to the message it came from. Nothing changed.');
  });

  it('refuses the Start button of the older, cancelled plan', async () => {
    const reply = await refusedClick({ messageTs: older.root.ts, value: older.value, blockId: older.blockId });
    expect(reply).toBe(`\`${older.opId}\` is cancelled; this Start button is no longer valid. Nothing changed.`);
  });
});

describe('replayed requests', () => {
  /** A slash command body as Slack sends it, with a fixed trigger id. */
  function slashBody(text: string, triggerId: string): string {
    return new URLSearchParams({
      token: 'emulator-verification-token',
      team_id: 'T0TEST',
      team_domain: 'talos-test',
      channel_id: CHANNELS.production,
      channel_name: 'maint-production',
      user_id: USERS.alice,
      user_name: 'alice',
      command: '/talos',
      text,
      api_app_id: 'A0TEST',
      is_enterprise_install: 'false',
      response_url: `${h.slack.origin}/response/replayed`,
      trigger_id: triggerId,
    }).toString();
  }

  /** Replies the bot sent through the response_url of the replayed bodies. */
  const replies = (): number => h.slack.responseUrlCalls.filter((c) => c.id === 'replayed').length;

  /** Posts the same body with the same timestamp and signature `times` times, all at once. */
  async function replay(body: string, times: number): Promise<number[]> {
    const signing = { requestTimestampSec: Math.floor(Date.now() / 1000) };
    const responses = await Promise.all(Array.from({ length: times }, () => postSigned(url, body, h.slack.signingSecret, signing)));
    return responses.map((r) => r.status);
  }

  it('answers a replayed /talos health once in the channel, with one job', async () => {
    // Arrange
    const before = await state.read();
    const roots = h.slack.channelMessages(CHANNELS.production).filter((m) => /Health gate/.test(m.text)).length;

    // Act
    const statuses = await replay(slashBody('health', '1111111111.2222222222.replayed0health'), 3);

    // Assert
    expect(statuses).toEqual([200, 200, 200]);
    await h.slack.waitFor(() => h.slack.channelMessages(CHANNELS.production).some((m) => /Health gate (passed|failed)/.test(m.text)), {
      timeoutMs: 30_000,
    });
    await waitForSettled(h);
    expect(h.slack.channelMessages(CHANNELS.production).filter((m) => /Health gate/.test(m.text)).length).toBe(roots + 1);
    expect((await state.read()).jobs['talos-read']).toBe(before.jobs['talos-read']! + 1);
  });

  it('creates one operation and one preflight for a replayed /talos upgrade', async () => {
    // Arrange
    const before = await state.read();
    const opsBefore = await state.redis.zcard('talos:ops:production');
    const answered = replies();

    // Act
    await replay(slashBody(`upgrade talos ${TARGET}`, '3333333333.4444444444.replayed0upgrade'), 3);

    // Assert
    // Each copy is acked empty and answered through the response_url, once the bot has dealt with it.
    await h.slack.waitFor(() => replies() >= answered + 3, { timeoutMs: 30_000, description: 'a reply to each replayed command' });
    await waitForSettled(h);
    expect(await state.redis.zcard('talos:ops:production')).toBe(opsBefore + 1);
    // Its one preflight, and the expiry of the one plan it posted.
    expect((await state.read()).jobs['talos-ops']).toBe(before.jobs['talos-ops']! + 2);
  });

  it('starts the plan once when its Start click is replayed', async () => {
    // Arrange
    const payload = {
      type: 'block_actions',
      user: { id: USERS.alice, username: 'alice', name: 'alice', team_id: 'T0TEST' },
      api_app_id: 'A0TEST',
      token: 'emulator-verification-token',
      container: { type: 'message', message_ts: current.root.ts, channel_id: CHANNELS.production, is_ephemeral: false },
      trigger_id: '5555555555.6666666666.replayed0start',
      team: { id: 'T0TEST', domain: 'talos-test' },
      channel: { id: CHANNELS.production, name: 'maint-production' },
      message: { type: 'message', ts: current.root.ts, text: '' },
      response_url: `${h.slack.origin}/response/replayed`,
      actions: [{ type: 'button', action_id: ACTION.start, block_id: current.blockId, value: current.value, action_ts: '1.2' }],
    };
    const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
    const answered = replies();

    // Act
    const statuses = await replay(body, 3);

    // Assert
    expect(statuses).toEqual([200, 200, 200]);
    await h.slack.waitFor(async () => (await state.operation(current.opId))?.state !== 'planned', {
      description: `${current.opId} leaving planned`,
    });
    // The clicks that lost the race are told so through the response_url.
    await h.slack.waitFor(() => replies() >= answered + 2, {
      timeoutMs: 30_000,
      description: 'a reply to each replayed click that did not start the plan',
    });
    await waitForSettled(h);
    const starts = (await state.operation(current.opId))?.audit as { event: string }[];
    expect(starts.filter((a) => a.event === 'started')).toHaveLength(1);
    expect(await state.redis.get('talos:lock:production')).toBe(current.opId);
  });
});
