import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { App, LogLevel, SocketModeReceiver, type types } from '@slack/bolt';
import { WebClient } from '@slack/web-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RawData, WebSocket } from 'ws';
import { type JsonObject, type SlackEmulator, startSlackEmulator } from './index.ts';

const CHANNEL = 'C0OPS';
const ANA = 'U0ANA';
const BEN = 'U0BEN';

const approvalBlocks = (value: string, blockId: string): types.KnownBlock[] => [
  { type: 'header', text: { type: 'plain_text', text: 'Upgrade cp-1' } },
  { type: 'section', text: { type: 'mrkdwn', text: 'Target: *v1.9.2*' } },
  {
    type: 'actions',
    block_id: blockId,
    elements: [
      { type: 'button', action_id: 'approve', text: { type: 'plain_text', text: 'Approve' }, value, style: 'primary' },
      { type: 'button', action_id: 'stop', text: { type: 'plain_text', text: 'Stop' }, value, style: 'danger' },
    ],
  },
];

let emu: SlackEmulator;
let stoppers: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  emu = await startSlackEmulator({
    channels: [{ id: CHANNEL, name: 'ops' }],
    users: [
      { id: ANA, name: 'ana' },
      { id: BEN, name: 'ben' },
    ],
    usergroups: [{ id: 'S0SRE', users: [ANA, BEN] }],
  });
});

afterEach(async () => {
  for (const stop of stoppers.reverse()) await stop();
  stoppers = [];
  await emu.close();
});

function socketApp(): App {
  const app = new App({
    token: emu.botToken,
    appToken: emu.appToken,
    socketMode: true,
    logLevel: LogLevel.ERROR,
    clientOptions: { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } },
  });
  stoppers.push(() => app.stop());
  return app;
}

async function startedSocketApp(register: (app: App) => void): Promise<App> {
  const app = socketApp();
  register(app);
  await app.start();
  return app;
}

function webClient(token = emu.botToken, retries = 0): WebClient {
  return new WebClient(token, {
    slackApiUrl: emu.apiUrl,
    logLevel: LogLevel.ERROR,
    retryConfig: { retries, minTimeout: 10, maxTimeout: 10 },
  });
}

/** Calls the Web API without WebClient, to see platform errors as plain JSON. */
async function api(method: string, body: JsonObject, token: string | null = emu.botToken): Promise<JsonObject> {
  const response = await fetch(`${emu.apiUrl}${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  });
  return (await response.json()) as JsonObject;
}

function parseFrame(data: RawData): JsonObject {
  return JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : '{}') as JsonObject;
}

async function rawSocket(): Promise<{ ws: WebSocket; frames: JsonObject[] }> {
  const opened = await api('apps.connections.open', {}, emu.appToken);
  const ws = new WebSocket(String(opened.url));
  const frames: JsonObject[] = [];
  ws.on('message', (data) => frames.push(parseFrame(data)));
  stoppers.push(async () => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, frames };
}

describe('Socket Mode with a real Bolt app', () => {
  it('lets app.start() resolve after hello, with auth.test and apps.connections.open served', async () => {
    await startedSocketApp(() => {});

    expect(emu.connectionCount()).toBe(1);
    expect(emu.callsTo('auth.test')[0]?.ok).toBe(true);
    expect(emu.callsTo('apps.connections.open')[0]?.ok).toBe(true);
    const hello = JSON.parse(emu.socketFrames.find((f) => f.direction === 'out')?.data ?? '{}') as JsonObject;
    expect(hello).toMatchObject({ type: 'hello', num_connections: 1, connection_info: { app_id: 'A0TEST' } });
  });

  it('delivers a slash command and records a non-empty ack as the ephemeral reply', async () => {
    const seen: JsonObject[] = [];
    await startedSocketApp((app) =>
      app.command('/talos', async ({ command, ack }) => {
        seen.push({ ...command });
        await ack({ text: 'hi' });
      }),
    );

    const result = await emu.sendSlashCommand({ user: ANA, channel: CHANNEL, text: 'health' });

    expect(result).toMatchObject({ timedOut: false, payload: { text: 'hi' } });
    expect(seen[0]).toMatchObject({
      command: '/talos',
      text: 'health',
      user_id: ANA,
      user_name: 'ana',
      channel_id: CHANNEL,
      channel_name: 'ops',
      team_id: 'T0TEST',
      api_app_id: 'A0TEST',
    });
    expect(String(seen[0]?.response_url)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/response\//);
    expect(emu.ephemerals(CHANNEL, ANA)).toMatchObject([{ text: 'hi', source: 'ack' }]);
    expect(emu.acks).toMatchObject([{ type: 'slash_commands', payload: { text: 'hi' }, transport: 'socket' }]);
  });

  it('stores posts, threaded replies and edits made by a command handler', async () => {
    await startedSocketApp((app) =>
      app.command('/talos', async ({ command, ack, client }) => {
        await ack();
        const parent = await client.chat.postMessage({ channel: command.channel_id, text: 'Health check started' });
        const ts = String(parent.ts);
        await client.chat.postMessage({ channel: command.channel_id, thread_ts: ts, text: 'etcd: 3/3 healthy' });
        await client.chat.update({ channel: command.channel_id, ts, text: 'Health check passed' });
      }),
    );

    await emu.sendSlashCommand({ user: ANA, channel: CHANNEL, text: 'health' });
    const [parent] = await emu.waitFor(() => {
      const top = emu.channelMessages(CHANNEL);
      return top[0]?.edited ? top : undefined;
    });

    expect(emu.channelMessages(CHANNEL)).toHaveLength(1);
    expect(parent).toMatchObject({ text: 'Health check passed', bot_id: 'B0BOT', user: 'U0BOT', reply_count: 1 });
    const replies = emu.thread(CHANNEL, parent?.ts ?? '');
    expect(replies.map((r) => r.text)).toEqual(['etcd: 3/3 healthy']);
    expect(parent?.latest_reply).toBe(replies[0]?.ts);
    expect(emu.edits(CHANNEL, parent?.ts ?? '').map((e) => e.text)).toEqual(['Health check passed']);
    expect(emu.versions(CHANNEL, parent?.ts ?? '').map((e) => e.text)).toEqual(['Health check started', 'Health check passed']);
  });

  it('delivers a button click with the value, message ts and user, and honours respond(replace_original)', async () => {
    const clicks: { value: unknown; messageTs: unknown; userId: string; blockId: string }[] = [];
    const app = await startedSocketApp((a) =>
      a.action('approve', async ({ ack, body, action, respond }) => {
        await ack();
        if (body.type !== 'block_actions' || action.type !== 'button') return;
        clicks.push({
          value: action.value,
          messageTs: body.message?.ts,
          userId: body.user.id,
          blockId: 'block_id' in action ? action.block_id : '',
        });
        await respond({ replace_original: true, text: `Approved by <@${body.user.id}>` });
      }),
    );
    const posted = await app.client.chat.postMessage({ channel: CHANNEL, text: 'Approve?', blocks: approvalBlocks('op-42', 'op-42-v1') });
    const ts = String(posted.ts);

    const result = await emu.clickButton({ user: BEN, channel: CHANNEL, messageTs: ts, actionId: 'approve' });

    expect(result.timedOut).toBe(false);
    expect(clicks).toEqual([{ value: 'op-42', messageTs: ts, userId: BEN, blockId: 'op-42-v1' }]);
    const updated = await emu.waitFor(() => emu.message(CHANNEL, ts)?.edited && emu.message(CHANNEL, ts));
    expect(updated).toMatchObject({ text: `Approved by <@${BEN}>` });
    expect(updated.blocks).toBeUndefined();
  });

  it('sends overridden value and block_id, and still sends a click on an unknown message', async () => {
    const actions: JsonObject[] = [];
    const app = await startedSocketApp((a) =>
      a.action('approve', async ({ ack, action, body }) => {
        await ack();
        actions.push({ ...action, messageTs: body.type === 'block_actions' ? body.message?.ts : undefined });
      }),
    );
    const posted = await app.client.chat.postMessage({ channel: CHANNEL, text: 'x', blocks: approvalBlocks('op-1', 'op-1-v2') });

    await emu.clickButton({
      user: ANA,
      channel: CHANNEL,
      messageTs: String(posted.ts),
      actionId: 'approve',
      value: 'op-999',
      blockId: 'op-1-v1',
    });
    await emu.clickButton({ user: ANA, channel: CHANNEL, messageTs: '1.000001', actionId: 'approve', value: 'op-7' });

    expect(actions).toMatchObject([
      { value: 'op-999', block_id: 'op-1-v1' },
      { value: 'op-7', messageTs: '1.000001' },
    ]);
  });

  it('delivers each command to exactly one of two connected apps, alternating', async () => {
    const received = [0, 0];
    for (const index of [0, 1]) {
      await startedSocketApp((app) =>
        app.command('/talos', async ({ ack }) => {
          received[index] = (received[index] ?? 0) + 1;
          await ack();
        }),
      );
    }
    await emu.waitForConnections(2);

    for (let i = 0; i < 4; i += 1) {
      const result = await emu.sendSlashCommand({ user: ANA, channel: CHANNEL, text: `n${i}` });
      expect(result.timedOut).toBe(false);
    }

    expect(received).toEqual([2, 2]);
  });

  it('lets Bolt reconnect after a disconnect frame and keep receiving commands', async () => {
    // A custom receiver is the only way to shorten the reconnect delay (clientPingTimeout).
    const receiver = new SocketModeReceiver({
      appToken: emu.appToken,
      clientPingTimeout: 100,
      logLevel: LogLevel.ERROR,
      installerOptions: { clientOptions: { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } } },
    });
    const app = new App({ token: emu.botToken, receiver, logLevel: LogLevel.ERROR, clientOptions: { slackApiUrl: emu.apiUrl } });
    stoppers.push(() => app.stop());
    app.command('/talos', async ({ ack }) => ack({ text: 'still here' }));
    await app.start();

    emu.disconnectAll('refresh_requested');
    await emu.waitFor(() => emu.callsTo('apps.connections.open').length === 2 && emu.connectionCount() === 1);

    expect(await emu.sendSlashCommand({ user: ANA, channel: CHANNEL, text: 'x' })).toMatchObject({ payload: { text: 'still here' } });
  });

  it('delivers events_api envelopes with retry fields', async () => {
    const seen: { text: unknown; retryNum: unknown }[] = [];
    await startedSocketApp((app) =>
      app.event('app_mention', async ({ event, context }) => {
        seen.push({ text: event.text, retryNum: context.retryNum });
      }),
    );

    const first = await emu.sendEvent({ type: 'app_mention', user: ANA, channel: CHANNEL, text: '<@U0BOT> health', ts: '1.000001' });
    await emu.sendEvent(
      { type: 'app_mention', user: ANA, channel: CHANNEL, text: 'again', ts: '1.000001' },
      { retryAttempt: 1, retryReason: 'timeout' },
    );

    expect(first.timedOut).toBe(false);
    await emu.waitFor(() => seen.length === 2);
    expect(seen).toEqual([
      { text: '<@U0BOT> health', retryNum: 0 },
      { text: 'again', retryNum: 1 },
    ]);
  });

  it('uploads a file end to end with files.uploadV2 and records its content', async () => {
    const app = await startedSocketApp(() => {});
    const parent = await app.client.chat.postMessage({ channel: CHANNEL, text: 'Upgrade log' });

    await app.client.filesUploadV2({
      channel_id: CHANNEL,
      thread_ts: String(parent.ts),
      content: 'line 1\nCANARY-123\n',
      filename: 'upgrade.log',
      title: 'Upgrade log',
    });

    expect(emu.uploadedFiles()).toMatchObject([
      { filename: 'upgrade.log', title: 'Upgrade log', content: 'line 1\nCANARY-123\n', channel: CHANNEL, thread_ts: String(parent.ts) },
    ]);
    expect(emu.thread(CHANNEL, String(parent.ts))[0]?.files).toMatchObject([{ name: 'upgrade.log' }]);
    expect(emu.allTraffic()).toContain('CANARY-123');
  });
});

describe('Web API faults', () => {
  it('answers 429 with Retry-After, and WebClient retries after it and succeeds', async () => {
    emu.faults.rateLimit({ count: 1, retryAfterSec: 1, methods: ['chat.postMessage'] });
    const started = Date.now();

    const res = await webClient(emu.botToken, 2).chat.postMessage({ channel: CHANNEL, text: 'after the limit' });

    expect(res.ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(emu.callsTo('chat.postMessage').map((c) => [c.status, c.error])).toEqual([
      [429, 'ratelimited'],
      [200, undefined],
    ]);
    expect(emu.channelMessages(CHANNEL)).toHaveLength(1);
  });

  it('answers 5xx for the configured count only, leaving other methods alone', async () => {
    emu.faults.serverError({ count: 2, status: 503, methods: ['chat.update'] });

    await webClient().auth.test();
    await expect(webClient().chat.update({ channel: CHANNEL, ts: '1.000001', text: 'x' })).rejects.toThrow(/503/);
    const retried = webClient(emu.botToken, 1).chat.update({ channel: CHANNEL, ts: '1.000001', text: 'x' });

    await expect(retried).rejects.toMatchObject({ data: { error: 'message_not_found' } });
    expect(emu.callsTo('chat.update').map((c) => c.status)).toEqual([503, 503, 200]);
  });

  it('answers 5xx after writing when asked, so a blind retry posts the message twice', async () => {
    emu.faults.serverError({ count: 1, status: 500, methods: ['chat.postMessage'], afterWrite: true });

    const res = await webClient(emu.botToken, 1).chat.postMessage({ channel: CHANNEL, text: 'written, then 500' });

    expect(res.ok).toBe(true);
    expect(emu.callsTo('chat.postMessage').map((c) => c.status)).toEqual([500, 200]);
    expect(emu.channelMessages(CHANNEL).map((m) => m.text)).toEqual(['written, then 500', 'written, then 500']);
  });

  it('applies a call and never answers it, or cuts its connection, when asked: the client times out or fails with the write done', async () => {
    emu.faults.lostAnswer({ methods: ['chat.postMessage'], how: 'hang' });
    emu.faults.lostAnswer({ methods: ['chat.update'], how: 'cut' });
    const client = new WebClient(emu.botToken, { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 }, timeout: 300 });

    await expect(client.chat.postMessage({ channel: CHANNEL, text: 'written, no answer' })).rejects.toMatchObject({
      code: 'slack_webapi_request_error',
    });
    const [posted] = emu.channelMessages(CHANNEL);
    await expect(client.chat.update({ channel: CHANNEL, ts: posted!.ts, text: 'edited, no answer' })).rejects.toMatchObject({
      code: 'slack_webapi_request_error',
    });

    expect(emu.channelMessages(CHANNEL).map((m) => m.text)).toEqual(['edited, no answer']);
    expect(emu.apiCalls.map((c) => [c.method, c.status])).toEqual([
      ['chat.postMessage', 0],
      ['chat.update', 0],
    ]);
  });

  it('fails only the calls whose arguments match a fault', async () => {
    emu.faults.serverError({ methods: ['chat.postMessage'], afterWrite: true, where: (args) => args.thread_ts !== undefined });
    const client = webClient(emu.botToken, 0);
    const { ts } = await client.chat.postMessage({ channel: CHANNEL, text: 'root' });

    await expect(client.chat.postMessage({ channel: CHANNEL, thread_ts: ts!, text: 'reply' })).rejects.toThrow(/500/);
    await client.chat.postMessage({ channel: CHANNEL, thread_ts: ts!, text: 'second reply' });

    expect(emu.callsTo('chat.postMessage').map((c) => c.status)).toEqual([200, 500, 200]);
    expect(emu.thread(CHANNEL, ts!).map((m) => m.text)).toEqual(['reply', 'second reply']);
  });

  it('delays calls until cleared', async () => {
    // A delay far longer than the test: a later call that is answered was not delayed.
    emu.faults.delay({ ms: 600_000, methods: ['auth.test'] });
    let delayedAnswered = false;
    const delayed = webClient()
      .auth.test()
      .finally(() => (delayedAnswered = true));
    await emu.waitFor(() => emu.outstanding().requests === 1, { description: 'the delayed call in the emulator' });

    emu.faults.clear();
    const again = await webClient().auth.test();

    expect(again.ok).toBe(true);
    expect(delayedAnswered).toBe(false);
    emu.faults.abortDelays();
    expect((await delayed).ok).toBe(true);
  });

  it('holds calls unanswered until released, leaving other methods alone, and lets later calls through', async () => {
    // Arrange
    const held = emu.faults.hold({ methods: ['usergroups.users.list'] });
    const client = webClient();

    // Act
    const pending = client.usergroups.users.list({ usergroup: 'S0SRE' });
    await emu.waitFor(() => held.waiting === 1, { description: 'the held call' });
    await client.auth.test();
    const answeredWhileHeld = emu.apiCalls.map((c) => c.method);
    held.release();
    const first = await pending;
    const later = await client.usergroups.users.list({ usergroup: 'S0SRE' });

    // Assert
    expect(answeredWhileHeld).toEqual(['auth.test']);
    expect(first).toMatchObject({ ok: true, users: [ANA, BEN] });
    expect(later).toMatchObject({ ok: true, users: [ANA, BEN] });
    expect(held.arrived).toEqual(['usergroups.users.list']);
    expect(held).toMatchObject({ waiting: 0, released: true });
    expect(emu.apiCalls.map((c) => c.method)).toEqual(['auth.test', 'usergroups.users.list', 'usergroups.users.list']);
  });

  it('holds every method when none is named, and releases held calls on clear()', async () => {
    // Arrange
    const held = emu.faults.hold();

    // Act
    const pending = [webClient().auth.test(), webClient().chat.postMessage({ channel: CHANNEL, text: 'held' })];
    await emu.waitFor(() => held.waiting === 2, { description: 'both calls held' });
    const answeredWhileHeld = emu.apiCalls.length;
    emu.faults.clear();
    const replies = await Promise.all(pending);

    // Assert
    expect(answeredWhileHeld).toBe(0);
    expect([...held.arrived].sort()).toEqual(['auth.test', 'chat.postMessage']);
    expect(replies.map((r) => r.ok)).toEqual([true, true]);
    expect(emu.channelMessages(CHANNEL).map((m) => m.text)).toEqual(['held']);
  });

  it('writes a message at once and holds only its answer, for the matching call alone', async () => {
    // Arrange
    const answer = emu.faults.holdAnswer({ methods: ['chat.postMessage'], where: (args) => args.text === 'slow answer' });
    const client = webClient();

    // Act
    const pending = client.chat.postMessage({ channel: CHANNEL, text: 'slow answer' });
    await emu.waitFor(() => answer.waiting === 1, { description: 'the held answer' });
    const shownBeforeAnswer = emu.channelMessages(CHANNEL).map((m) => m.text);
    const other = await client.chat.postMessage({ channel: CHANNEL, text: 'answered at once' });
    answer.release();
    const reply = await pending;

    // Assert
    expect(shownBeforeAnswer).toEqual(['slow answer']);
    expect(other.ok).toBe(true);
    expect(reply).toMatchObject({ ok: true, ts: emu.channelMessages(CHANNEL)[0]!.ts });
  });

  it('releases a held answer on clear(), though its one use is spent', async () => {
    // Arrange
    const answer = emu.faults.holdAnswer({ methods: ['chat.postMessage'] });

    // Act
    const pending = webClient().chat.postMessage({ channel: CHANNEL, text: 'held answer' });
    await emu.waitFor(() => answer.waiting === 1, { description: 'the held answer' });
    emu.faults.clear();
    const reply = await pending;

    // Assert
    expect(reply.ok).toBe(true);
    expect(answer).toMatchObject({ waiting: 0, released: true });
  });
});

describe('Web API semantics', () => {
  it('checks tokens: not_authed, invalid_auth and the token kind', async () => {
    expect(await api('auth.test', {}, null)).toMatchObject({ ok: false, error: 'not_authed' });
    expect(await api('auth.test', {}, 'xoxb-wrong')).toMatchObject({ ok: false, error: 'invalid_auth' });
    expect(await api('chat.postMessage', { channel: CHANNEL, text: 'x' }, emu.appToken)).toMatchObject({ error: 'not_allowed_token_type' });
    expect(await api('apps.connections.open', {}, emu.botToken)).toMatchObject({ error: 'not_allowed_token_type' });
    expect(await api('auth.test', { token: emu.botToken }, null)).toMatchObject({
      ok: true,
      user_id: 'U0BOT',
      bot_id: 'B0BOT',
      team_id: 'T0TEST',
    });
    expect(await api('no.such.method', {})).toMatchObject({ ok: false, error: 'unknown_method' });
  });

  it('rejects unknown channels, empty messages and edits of unknown messages', async () => {
    expect(await api('chat.postMessage', { channel: 'C0NOPE', text: 'x' })).toMatchObject({ error: 'channel_not_found' });
    expect(await api('chat.postMessage', { channel: CHANNEL })).toMatchObject({ error: 'no_text' });
    expect(await api('chat.update', { channel: CHANNEL, ts: '1.000001', text: 'x' })).toMatchObject({ error: 'message_not_found' });
    const human = emu.postUserMessage({ user: ANA, channel: CHANNEL, text: 'hello' });
    expect(await api('chat.update', { channel: CHANNEL, ts: human.ts, text: 'x' })).toMatchObject({ error: 'cant_update_message' });
  });

  it('accepts a channel by #name and answers with its id', async () => {
    expect(await api('chat.postMessage', { channel: '#ops', text: 'x' })).toMatchObject({ ok: true, channel: CHANNEL });
  });

  it('validates Block Kit limits with json-pointer errors', async () => {
    const tooLong = await api('chat.postMessage', {
      channel: CHANNEL,
      blocks: [{ type: 'section', text: { type: 'mrkdwn', text: 'x'.repeat(3001) } }],
    });
    expect(tooLong).toMatchObject({
      ok: false,
      error: 'invalid_blocks',
      errors: ['must be less than 3001 characters [json-pointer:/blocks/0/text/text]'],
    });

    const many = await api('chat.postMessage', { channel: CHANNEL, blocks: Array.from({ length: 51 }, () => ({ type: 'divider' })) });
    expect(many).toMatchObject({ error: 'invalid_blocks', errors: ['no more than 50 items allowed [json-pointer:/blocks]'] });

    const button = (over: JsonObject): JsonObject => ({
      type: 'actions',
      elements: [{ type: 'button', action_id: 'a', text: { type: 'plain_text', text: 'Go' }, ...over }],
    });
    const cases: [JsonObject, string][] = [
      [button({ value: 'v'.repeat(2001) }), '/blocks/0/elements/0/value'],
      [button({ action_id: 'a'.repeat(256) }), '/blocks/0/elements/0/action_id'],
      [button({ text: { type: 'plain_text', text: 't'.repeat(76) } }), '/blocks/0/elements/0/text/text'],
      [{ ...button({}), block_id: 'b'.repeat(256) }, '/blocks/0/block_id'],
      [{ type: 'header', text: { type: 'plain_text', text: 'h'.repeat(151) } }, '/blocks/0/text/text'],
    ];
    for (const [block, pointer] of cases) {
      const reply = await api('chat.postMessage', { channel: CHANNEL, text: 'fallback', blocks: [block] });
      expect(reply.error).toBe('invalid_blocks');
      expect(String((reply.errors as string[])[0])).toContain(`[json-pointer:${pointer}]`);
    }
    expect(emu.channelMessages(CHANNEL)).toEqual([]);
  });

  it('issues strictly increasing ts values in Slack format', async () => {
    const tss: string[] = [];
    for (let i = 0; i < 20; i += 1) tss.push(String((await api('chat.postMessage', { channel: CHANNEL, text: `m${i}` })).ts));

    for (const ts of tss) expect(ts).toMatch(/^\d{10}\.\d{6}$/);
    for (let i = 1; i < tss.length; i += 1) expect(Number(tss[i])).toBeGreaterThan(Number(tss[i - 1]));
  });

  it('gives the channel history newest first, with message metadata only when asked for it', async () => {
    const client = webClient();
    await client.chat.postMessage({
      channel: CHANNEL,
      text: 'first',
      metadata: { event_type: 'talos_chatops_post', event_payload: { key: 'k-1' } },
    });
    await client.chat.postMessage({
      channel: CHANNEL,
      text: 'second',
      metadata: { event_type: 'talos_chatops_post', event_payload: { key: 'k-2' } },
    });

    const plain = await client.conversations.history({ channel: CHANNEL });
    const withMeta = await client.conversations.history({ channel: CHANNEL, include_all_metadata: true });

    expect(plain.messages?.map((m) => [m.text, m.metadata])).toEqual([
      ['second', undefined],
      ['first', undefined],
    ]);
    expect(withMeta.messages?.map((m) => m.metadata?.event_payload)).toEqual([{ key: 'k-2' }, { key: 'k-1' }]);
  });

  it('keeps blocks and metadata on chat.update unless they are replaced, and reads threads back', async () => {
    const client = webClient();
    const posted = await client.chat.postMessage({
      channel: CHANNEL,
      text: 'plan',
      blocks: approvalBlocks('op-1', 'op-1-v1'),
      metadata: { event_type: 'talos_op', event_payload: { op: 'op-1' } },
    });
    const ts = String(posted.ts);
    await client.chat.postMessage({ channel: CHANNEL, thread_ts: ts, text: 'r1' });
    await client.chat.postMessage({ channel: CHANNEL, thread_ts: ts, text: 'r2', reply_broadcast: true });
    await client.chat.update({ channel: CHANNEL, ts, text: 'plan (approved)' });

    expect(emu.message(CHANNEL, ts)).toMatchObject({
      blocks: approvalBlocks('op-1', 'op-1-v1'),
      metadata: { event_type: 'talos_op' },
      thread_ts: ts,
    });
    const replies = await client.conversations.replies({ channel: CHANNEL, ts });
    expect(replies.messages?.map((m) => m.text)).toEqual(['plan (approved)', 'r1', 'r2']);
    expect(replies.messages?.[0]?.metadata).toBeUndefined();
    const withMeta = await client.conversations.replies({ channel: CHANNEL, ts, include_all_metadata: true, limit: 1 });
    expect(withMeta.messages?.[0]?.metadata).toMatchObject({ event_payload: { op: 'op-1' } });
    expect(withMeta.has_more).toBe(true);
    expect(emu.channelMessages(CHANNEL).map((m) => m.subtype ?? 'plain')).toEqual(['plain', 'thread_broadcast']);

    await client.chat.update({ channel: CHANNEL, ts, text: 'done', blocks: [] });
    expect(emu.message(CHANNEL, ts)?.blocks).toBeUndefined();
  });

  it('serves users.info, usergroups.users.list and chat.postEphemeral', async () => {
    // users.info needs users:read: without it, Slack refuses the call before it looks the user up.
    const client = webClient();
    emu.setScopes(emu.scopes.filter((scope) => scope !== 'users:read'));
    await expect(client.users.info({ user: ANA })).rejects.toMatchObject({ data: { error: 'missing_scope', needed: 'users:read' } });
    emu.setScopes([...emu.scopes, 'users:read']);
    expect((await client.users.info({ user: ANA })).user).toMatchObject({ id: ANA, name: 'ana' });
    await expect(client.users.info({ user: 'U0NOBODY' })).rejects.toMatchObject({ data: { error: 'user_not_found' } });
    expect((await client.usergroups.users.list({ usergroup: 'S0SRE' })).users).toEqual([ANA, BEN]);

    const eph = await client.chat.postEphemeral({ channel: CHANNEL, user: BEN, text: 'only for ben' });

    expect(eph.message_ts).toMatch(/^\d+\.\d{6}$/);
    expect(emu.ephemerals(undefined, BEN)).toMatchObject([{ text: 'only for ben', source: 'chat.postEphemeral' }]);
    expect(emu.ephemerals(CHANNEL, ANA)).toEqual([]);
  });

  it("answers users.info with the profile's display name, empty when the person set none, and the full name", async () => {
    const named = await startSlackEmulator({
      channels: [{ id: CHANNEL, name: 'ops' }],
      users: [
        { id: 'U0CAROL', name: 'cng', realName: 'Carol Ng', displayName: 'carol' },
        { id: 'U0DAN', name: 'dan', realName: 'Dan Okafor' },
      ],
    });
    stoppers.push(() => named.close());
    named.setScopes([...named.scopes, 'users:read']);
    const client = new WebClient(named.botToken, { slackApiUrl: named.apiUrl, logLevel: LogLevel.ERROR, retryConfig: { retries: 0 } });

    const carol = (await client.users.info({ user: 'U0CAROL' })).user;
    const dan = (await client.users.info({ user: 'U0DAN' })).user;

    expect(carol).toMatchObject({ name: 'cng', real_name: 'Carol Ng', profile: { display_name: 'carol', real_name: 'Carol Ng' } });
    expect(dan).toMatchObject({ name: 'dan', real_name: 'Dan Okafor', profile: { display_name: '', real_name: 'Dan Okafor' } });
  });

  it('accepts multipart bodies and records raw bodies for canary searches', async () => {
    const form = new FormData();
    form.append('channel', CHANNEL);
    form.append('text', 'secret=CANARY-MULTIPART');
    const res = await fetch(`${emu.apiUrl}chat.postMessage`, {
      method: 'POST',
      headers: { authorization: `Bearer ${emu.botToken}` },
      body: form,
    });

    expect(await res.json()).toMatchObject({ ok: true });
    expect(emu.rawBodies().join()).toContain('CANARY-MULTIPART');
    expect(emu.channelMessages(CHANNEL)[0]?.text).toBe('secret=CANARY-MULTIPART');
  });
});

describe('Socket Mode protocol details', () => {
  it('records an ack timeout when the bot never acks, and when an ack is dropped', async () => {
    await emu.close();
    emu = await startSlackEmulator({ ackTimeoutMs: 150 });
    const { ws } = await rawSocket();

    const silent = await emu.sendSlashCommand({ user: ANA, channel: CHANNEL, text: 'x' });
    expect(silent).toMatchObject({ timedOut: true, reason: 'no_ack' });

    ws.on('message', (data) => {
      const frame = parseFrame(data);
      if (typeof frame.envelope_id === 'string') ws.send(JSON.stringify({ envelope_id: frame.envelope_id, payload: {} }));
    });
    emu.dropNextAcks(1);
    expect(await emu.sendSlashCommand({ user: ANA, channel: CHANNEL, text: 'y' })).toMatchObject({ timedOut: true });
    expect(await emu.sendSlashCommand({ user: ANA, channel: CHANNEL, text: 'z' })).toMatchObject({ timedOut: false });
    expect(emu.ackTimeouts.map((t) => t.reason)).toEqual(['no_ack', 'no_ack']);
  });

  it('reports no_connection when nothing is connected', async () => {
    expect(await emu.sendSlashCommand({ user: ANA, channel: CHANNEL, text: 'x' })).toMatchObject({
      timedOut: true,
      reason: 'no_connection',
    });
  });

  it('sends disconnect frames, and refuses an eleventh connection with too_many_websockets', async () => {
    const sockets: Awaited<ReturnType<typeof rawSocket>>[] = [];
    for (let i = 0; i < 11; i += 1) sockets.push(await rawSocket());
    await emu.waitFor(() => sockets[10]?.frames.length);

    expect(sockets[10]?.frames).toMatchObject([{ type: 'disconnect', reason: 'too_many_websockets' }]);
    expect(emu.connectionCount()).toBe(10);

    emu.disconnectAll('warning');
    await emu.waitFor(() => sockets[0]?.frames.length === 2);
    expect(sockets[0]?.frames[1]).toMatchObject({ type: 'disconnect', reason: 'warning' });
  });

  it('rejects a reused ticket', async () => {
    const opened = await api('apps.connections.open', {}, emu.appToken);
    const first = new WebSocket(String(opened.url));
    stoppers.push(async () => first.terminate());
    await new Promise((resolve) => first.once('open', resolve));
    const second = new WebSocket(String(opened.url));
    const failure = await new Promise<string>((resolve) => second.once('error', (e) => resolve(e.message)));
    expect(failure).toContain('401');
  });
});

describe('Socket Mode unreachable for a while', () => {
  it('answers apps.connections.open with 503, cuts the open sockets and refuses an issued URL, until the outage ends', async () => {
    const { ws } = await rawSocket();
    const issued = await api('apps.connections.open', {}, emu.appToken);
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));

    const outage = emu.socketOutage({ how: 'http_503' });
    const during = await webClient(emu.appToken)
      .apps.connections.open()
      .catch((e: unknown) => e as { code: string; statusCode: number });
    const late = new WebSocket(String(issued.url));
    const refused = await new Promise<string>((resolve) => late.once('error', (e) => resolve(e.message)));
    outage.end();
    const after = await api('apps.connections.open', {}, emu.appToken);

    expect(await closed).toBe(1006);
    expect(during).toMatchObject({ code: 'slack_webapi_http_error', statusCode: 503 });
    expect(refused).toMatch(/socket hang up|ECONNRESET/);
    expect(after).toMatchObject({ ok: true, url: expect.stringContaining('/link/') });
    expect({ failedOpens: outage.failedOpens, refusedUpgrades: outage.refusedUpgrades, over: outage.endedAt !== undefined }).toEqual({
      failedOpens: 1,
      refusedUpgrades: 1,
      over: true,
    });
  });

  it('leaves apps.connections.open without an answer when unreachable, which the WebClient reports as a request error', async () => {
    const outage = emu.socketOutage({ how: 'unreachable' });
    const during = await webClient(emu.appToken)
      .apps.connections.open()
      .catch((e: unknown) => e as { code: string });
    const otherMethods = await api('auth.test', {});
    outage.end();

    expect(during).toMatchObject({ code: 'slack_webapi_request_error' });
    expect(otherMethods).toMatchObject({ ok: true });
    expect(emu.callsTo('apps.connections.open').map((c) => c.status)).toEqual([0]);
  });

  it('ends by itself after forMs', async () => {
    const outage = emu.socketOutage({ forMs: 50 });
    await outage.over;

    expect(await api('apps.connections.open', {}, emu.appToken)).toMatchObject({ ok: true });
  });

  it('closes the socket itself after a disconnect frame, whatever the client does', async () => {
    const { ws, frames } = await rawSocket();
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));

    emu.disconnectAll('link_disabled');

    expect(await closed).toBe(1000);
    expect(frames.at(-1)).toMatchObject({ type: 'disconnect', reason: 'link_disabled' });
  });
});

describe('what the bot still owes', () => {
  it('counts a delivery until its ack, then a command acked empty until its response_url is called', async () => {
    // Arrange: a raw client that acks only when told to.
    const { ws, frames } = await rawSocket();
    const envelope = (): JsonObject | undefined => frames.find((f) => typeof f.envelope_id === 'string');

    // Act
    const delivered = emu.sendSlashCommand({ user: ANA, channel: CHANNEL, text: 'status' });
    const sent = await emu.waitFor(envelope, { description: 'the envelope' });
    const beforeAck = emu.outstanding();
    ws.send(JSON.stringify({ envelope_id: sent.envelope_id }));
    await delivered;
    const afterAck = emu.outstanding();
    const responseUrl = String((sent.payload as JsonObject).response_url);
    await fetch(responseUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'no operations yet' }),
    });

    // Assert
    expect(beforeAck).toEqual({ deliveries: 1, requests: 0, replies: 0 });
    expect(afterAck).toEqual({ deliveries: 0, requests: 0, replies: 1 });
    expect(emu.outstanding()).toMatchObject({ deliveries: 0, replies: 0 });
  });

  it('counts a Web API request until it is answered', async () => {
    // Arrange
    const held = emu.faults.hold({ methods: ['chat.postMessage'] });

    // Act
    const pending = webClient().chat.postMessage({ channel: CHANNEL, text: 'held' });
    await emu.waitFor(() => held.waiting === 1, { description: 'the held call' });
    const whileHeld = emu.outstanding().requests;
    held.release();
    await pending;

    // Assert
    expect(whileHeld).toBe(1);
    await emu.waitFor(() => emu.outstanding().requests === 0, { description: 'the answered request to count no more' });
  });
});

describe('response_url', () => {
  it('posts in_channel replies, records ephemerals and allows five uses', async () => {
    let responseUrl = '';
    await startedSocketApp((app) =>
      app.command('/talos', async ({ ack, command }) => {
        responseUrl = command.response_url;
        await ack();
      }),
    );
    await emu.sendSlashCommand({ user: ANA, channel: CHANNEL, text: 'x' });
    const post = (body: JsonObject): Promise<number> =>
      fetch(responseUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
        (r) => r.status,
      );

    expect(await post({ text: 'working…' })).toBe(200);
    expect(await post({ text: 'done', response_type: 'in_channel' })).toBe(200);
    for (let i = 0; i < 3; i += 1) expect(await post({ text: `n${i}` })).toBe(200);
    expect(await post({ text: 'sixth' })).toBe(404);

    expect(emu.channelMessages(CHANNEL).map((m) => m.text)).toEqual(['done']);
    expect(emu.ephemerals(CHANNEL, ANA).map((e) => e.text)).toEqual(['working…', 'n0', 'n1', 'n2']);
  });
});

describe('HTTP mode with a real Bolt app', () => {
  async function httpApp(register: (app: App) => void): Promise<string> {
    const app = new App({
      token: emu.botToken,
      signingSecret: emu.signingSecret,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } },
    });
    register(app);
    const server = (await app.start(0)) as Server;
    stoppers.push(() => app.stop());
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
  }

  it('receives a signed slash command and rejects a forged signature or an old timestamp', async () => {
    const url = await httpApp((app) => app.command('/talos', async ({ ack }) => ack({ text: 'pong' })));
    const input = { user: ANA, channel: CHANNEL, text: 'ping' };

    const ok = await emu.sendSlashCommandHttp(url, input);
    const forged = await emu.sendSlashCommandHttp(url, { ...input, forgeSignature: true });
    const stale = await emu.sendSlashCommandHttp(url, { ...input, staleTimestamp: true });

    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ text: 'pong' });
    expect(emu.ephemerals(CHANNEL, ANA)).toMatchObject([{ text: 'pong', source: 'ack' }]);
    expect(forged.status).toBe(401);
    expect(stale.status).toBe(401);
  });

  it('receives a signed button click', async () => {
    const values: unknown[] = [];
    const url = await httpApp((app) =>
      app.action('approve', async ({ ack, action }) => {
        await ack();
        if (action.type === 'button') values.push(action.value);
      }),
    );
    const posted = await api('chat.postMessage', { channel: CHANNEL, text: 'x', blocks: approvalBlocks('op-5', 'op-5-v1') });

    const res = await emu.clickButtonHttp(url, { user: ANA, channel: CHANNEL, messageTs: String(posted.ts), actionId: 'approve' });

    expect(res.status).toBe(200);
    expect(values).toEqual(['op-5']);
  });
});

describe('helpers', () => {
  it('renders a readable transcript with blocks, buttons and indented replies', async () => {
    const client = webClient();
    const plan = await client.chat.postMessage({ channel: CHANNEL, text: 'plan', blocks: approvalBlocks('op-1', 'op-1-v1') });
    await client.chat.postMessage({ channel: CHANNEL, thread_ts: String(plan.ts), text: 'Approved by <@U0ANA>' });
    await client.chat.postMessage({ channel: CHANNEL, text: 'All nodes healthy' });

    const lines = emu.transcript(CHANNEL).split('\n');

    expect(lines[0]).toBe('#ops (C0OPS)');
    expect(lines[1]).toMatch(/^ {2}\[\d\d:\d\d:\d\d\] talos \(bot\): == Upgrade cp-1 ==$/);
    expect(lines[2]?.trim()).toBe('Target: *v1.9.2*');
    expect(lines[3]?.trim()).toBe('[Approve] [Stop]');
    expect(lines[4]).toMatch(/^ {2} {4}│ \[\d\d:\d\d:\d\d\] talos \(bot\): Approved by @ana$/);
    expect(lines[5]).toMatch(/talos \(bot\): All nodes healthy$/);
  });

  it("renders times in the reader's zone and a button's confirm dialog in the transcript", async () => {
    const client = webClient();
    const blocks = [
      { type: 'section', text: { type: 'mrkdwn', text: 'Expires <!date^1796106600^{date_short_pretty} {time}|2026-12-01 06:30 UTC>' } },
      {
        type: 'actions',
        elements: [
          {
            type: 'button',
            action_id: 'approve',
            text: { type: 'plain_text', text: 'Approve' },
            confirm: {
              title: { type: 'plain_text', text: 'Approve cp-1?' },
              text: { type: 'mrkdwn', text: 'It reboots.' },
              confirm: { type: 'plain_text', text: 'Approve' },
              deny: { type: 'plain_text', text: 'Not yet' },
            },
          },
        ],
      },
    ];
    await client.chat.postMessage({ channel: CHANNEL, text: 'request', blocks });

    const berlin = emu.transcript(CHANNEL, { timeZone: 'Europe/Berlin', now: new Date('2026-12-01T12:00:00Z') }).split('\n');
    const tokyo = emu.transcript(CHANNEL, { timeZone: 'Asia/Tokyo', now: new Date('2026-11-20T12:00:00Z') }).split('\n');

    expect(berlin[1]).toMatch(/: Expires Today 07:30$/);
    expect(tokyo[1]).toMatch(/: Expires Dec 1, 2026 15:30$/);
    expect(berlin.slice(2).map((l) => l.trim())).toEqual([
      '[Approve]',
      '↳ [Approve] asks first: "Approve cp-1?" It reboots. [Approve] [Not yet]',
    ]);
  });

  it("renders one message as first posted, and a text's markup, as a reader sees them", async () => {
    const client = webClient();
    const posted = await client.chat.postMessage({ channel: CHANNEL, text: 'Approve cp-1? <@U0ANA>' });
    await client.chat.update({ channel: CHANNEL, ts: String(posted.ts), text: 'Approved by <@U0ANA>' });

    const first = emu.render(CHANNEL, String(posted.ts), { version: 0 });
    const now = emu.render(CHANNEL, String(posted.ts));
    const text = emu.readable('requested by <@U0ANA> <!date^1796106600^{date_short_pretty} {time}|2026-12-01 06:30 UTC>', {
      timeZone: 'Asia/Tokyo',
      now: new Date('2026-12-01T12:00:00Z'),
    });

    expect(first).toMatch(/talos \(bot\): Approve cp-1\? @ana$/);
    expect(now).toMatch(/talos \(bot\) \(edited\): Approved by @ana$/);
    expect(text).toBe('requested by @ana Today 15:30');
  });

  it('waitFor awaits an async condition', async () => {
    let calls = 0;
    const value = await emu.waitFor(async () => {
      calls += 1;
      await Promise.resolve();
      return calls >= 3 && calls;
    });
    expect(value).toBe(3);
  });

  it('waitFor rejects with a descriptive error', async () => {
    await expect(emu.waitFor(() => false, { timeoutMs: 50, description: 'the impossible' })).rejects.toThrow(
      /waitFor timed out after 50 ms waiting for the impossible/,
    );
  });
});
