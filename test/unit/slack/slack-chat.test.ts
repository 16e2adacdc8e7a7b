import { WebAPIHTTPError, WebAPIRateLimitedError, WebAPIRequestError, WebClient, WebClientEvent } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import {
  createSlackChat,
  LOOKBACK_MS,
  onSlackRateLimited,
  POST_KEY_EVENT,
  slackErrorName,
  slackMethodOf,
} from '../../../src/slack/slack-chat.ts';
import { writeOutcome } from '../../../src/slack/write-once.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';

function platformError(error: string): Error {
  return Object.assign(new Error(`An API error occurred: ${error}`), { code: 'slack_webapi_platform_error', data: { ok: false, error } });
}

/** A WebClient whose calls fail as Slack would answer them. */
function failingClient(error: Error): WebClient {
  const reject = (): Promise<never> => Promise.reject(error);
  return {
    chat: { postMessage: reject, update: reject, postEphemeral: reject },
    files: { getUploadURLExternal: reject },
  } as unknown as WebClient;
}

describe('createSlackChat', () => {
  it("reports a failed call with its Web API method and Slack's error, and still throws it", async () => {
    const errors: [string, string][] = [];
    const chat = createSlackChat(failingClient(platformError('channel_not_found')), new SecretScrubber(), {
      onError: (method, error) => errors.push([method, error]),
    });

    await expect(chat.reply('C0MAINTPRD', '1.000', { text: 'hi' })).rejects.toThrow('channel_not_found');
    await expect(chat.update('C0MAINTPRD', '1.000', { text: 'hi' })).rejects.toThrow('channel_not_found');
    await expect(chat.upload('C0MAINTPRD', '1.000', { filename: 'a.md', title: 'a', content: 'x' })).rejects.toThrow('channel_not_found');

    expect(errors).toEqual([
      ['chat.postMessage', 'channel_not_found'],
      ['chat.update', 'channel_not_found'],
      ['files.getUploadURLExternal', 'channel_not_found'],
    ]);
  });
});

describe('slackErrorName', () => {
  it.each([
    [platformError('ratelimited'), 'ratelimited'],
    [Object.assign(new Error('HTTP 503'), { code: 'slack_webapi_http_error', statusCode: 503 }), 'http_503'],
    [Object.assign(new Error('socket hang up'), { code: 'slack_webapi_request_error' }), 'request_error'],
    [new Error('no ts'), 'unknown'],
    [undefined, 'unknown'],
  ])('names %s as %s', (error, name) => {
    expect(slackErrorName(error)).toBe(name);
  });
});

describe('onSlackRateLimited', () => {
  it('reports the method of each 429 the client waits out', () => {
    const client = new WebClient('xoxb-test');
    const methods: string[] = [];
    onSlackRateLimited(client, (method) => methods.push(method));

    client.emit(WebClientEvent.RATE_LIMITED, 1, { url: 'http://127.0.0.1:4000/api/chat.update', body: {} });
    client.emit(WebClientEvent.RATE_LIMITED, 2, { url: 'https://files.slack.com/upload/v1/CwABAAAAXAoAAZ', body: {} });

    expect(methods).toEqual(['chat.update', 'files.upload']);
  });

  it('keeps method names as the Web API spells them', () => {
    expect(slackMethodOf('https://slack.com/api/usergroups.users.list')).toBe('usergroups.users.list');
    expect(slackMethodOf('https://slack.com/api/chat.postMessage?x=1')).toBe('chat.postMessage');
  });
});

/** How the fake Slack answers one write: applied and answered, applied then the answer lost, lost before the write, a 429, a refusal. */
type Answer = 'ok' | 'lost-after-write' | 'lost' | 'timeout-after-write' | 'limited' | 'refused';

interface FakeMessage {
  ts: string;
  thread_ts?: string;
  text?: string;
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  files?: { id: string }[];
}

const NOW = Date.parse('2026-03-01T10:00:00Z');

/**
 * A WebClient on an in-memory channel: writes answer as `answers` says, in order (then `ok`),
 * reads answer `readAnswers` in order (then `ok`); every call is recorded.
 */
function fakeSlack(answers: { write?: Answer[]; read?: ('ok' | 'lost')[] } = {}) {
  const messages: FakeMessage[] = [];
  const calls: { method: string; args: Record<string, unknown> }[] = [];
  const writes = [...(answers.write ?? [])];
  const reads = [...(answers.read ?? [])];
  let seq = 0;
  const nextTs = (): string => `${NOW / 1000}.${String((seq += 1)).padStart(6, '0')}`;
  const lost = (): Error => new WebAPIHTTPError(500, 'Internal Server Error', {}, 'Internal Server Error');
  const write = async <T>(method: string, args: Record<string, unknown>, apply: () => T): Promise<T> => {
    calls.push({ method, args });
    const answer = writes.shift() ?? 'ok';
    if (answer === 'limited') throw new WebAPIRateLimitedError(2);
    if (answer === 'refused')
      throw Object.assign(new Error('An API error occurred: channel_not_found'), {
        code: 'slack_webapi_platform_error',
        data: { ok: false, error: 'channel_not_found' },
      });
    if (answer === 'lost') throw lost();
    const result = apply();
    if (answer === 'lost-after-write') throw lost();
    if (answer === 'timeout-after-write')
      throw new WebAPIRequestError(Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' }));
    return result;
  };
  const read = async <T>(method: string, args: Record<string, unknown>, answer: () => T): Promise<T> => {
    calls.push({ method, args });
    if ((reads.shift() ?? 'ok') === 'lost') throw lost();
    return answer();
  };
  const visible = (m: FakeMessage, args: Record<string, unknown>) => {
    const wire = { ...m, bot_id: 'B0BOT' };
    if (args['include_all_metadata'] !== true) delete wire.metadata;
    return wire;
  };
  const inWindow = (args: Record<string, unknown>) => (m: FakeMessage) =>
    args['oldest'] === undefined || Number(m.ts) > Number(args['oldest']);
  const client = {
    chat: {
      postMessage: (args: Record<string, unknown>) =>
        write('chat.postMessage', args, () => {
          const message: FakeMessage = { ts: nextTs(), text: args['text'] as string };
          if (args['thread_ts'] !== undefined) message.thread_ts = args['thread_ts'] as string;
          if (args['metadata'] !== undefined) message.metadata = args['metadata'] as FakeMessage['metadata'];
          messages.push(message);
          return { ok: true, ts: message.ts };
        }),
    },
    conversations: {
      history: (args: Record<string, unknown>) =>
        read('conversations.history', args, () => ({
          ok: true,
          messages: messages
            .filter((m) => m.thread_ts === undefined)
            .filter(inWindow(args))
            .reverse()
            .map((m) => visible(m, args)),
        })),
      replies: (args: Record<string, unknown>) =>
        read('conversations.replies', args, () => ({
          ok: true,
          messages: messages
            .filter((m) => m.ts === args['ts'] || m.thread_ts === args['ts'])
            .filter(inWindow(args))
            .map((m) => visible(m, args)),
        })),
    },
    files: {
      getUploadURLExternal: (args: Record<string, unknown>) =>
        read('files.getUploadURLExternal', args, () => ({ ok: true, upload_url: 'https://files.example/upload/F1', file_id: 'F1' })),
      completeUploadExternal: (args: Record<string, unknown>) =>
        write('files.completeUploadExternal', args, () => {
          messages.push({ ts: nextTs(), thread_ts: args['thread_ts'] as string, files: [{ id: 'F1' }] });
          return { ok: true, files: [{ id: 'F1' }] };
        }),
    },
  } as unknown as WebClient;
  const pauses: number[] = [];
  const uploads: string[] = [];
  const chat = createSlackChat(client, new SecretScrubber(), {
    now: () => NOW,
    writeOnce: { clock: { sleep: async (ms) => void pauses.push(ms) } },
    fetch: (async (url: string) => {
      uploads.push(url);
      return new Response('OK');
    }) as unknown as typeof fetch,
  });
  const methods = (): string[] => calls.map((c) => c.method);
  return { chat, messages, calls, methods, pauses, uploads };
}

const keyOf = (m: FakeMessage): unknown => m.metadata?.event_payload['key'];

describe('createSlackChat: a keyed post is in Slack exactly once', () => {
  it('adopts the post Slack wrote before answering 500, found by its key in the channel', async () => {
    const slack = fakeSlack({ write: ['lost-after-write'] });

    const { ts } = await slack.chat.post('C0MAINTPRD', { text: 'plan' }, { key: 'op-1-root' });

    expect(slack.messages.map(keyOf)).toEqual(['op-1-root']);
    expect(ts).toBe(slack.messages[0]!.ts);
    expect(slack.methods()).toEqual(['chat.postMessage', 'conversations.history']);
    const lookup = slack.calls[1]!.args;
    expect(lookup).toMatchObject({ channel: 'C0MAINTPRD', include_all_metadata: true, oldest: ((NOW - LOOKBACK_MS) / 1000).toFixed(6) });
    expect(slack.calls[0]!.args['metadata']).toEqual({ event_type: POST_KEY_EVENT, event_payload: { key: 'op-1-root' } });
  });

  it('adopts a reply whose answer timed out, found in its thread', async () => {
    const slack = fakeSlack({ write: ['ok', 'timeout-after-write'] });
    const root = await slack.chat.post('C0MAINTPRD', { text: 'gate' }, { key: 'health-1-root' });

    const { ts } = await slack.chat.reply('C0MAINTPRD', root.ts, { text: 'etcd' }, { key: 'health-1-check-etcd' });

    expect(slack.messages.map(keyOf)).toEqual(['health-1-root', 'health-1-check-etcd']);
    expect(ts).toBe(slack.messages[1]!.ts);
    expect(slack.methods()).toEqual(['chat.postMessage', 'chat.postMessage', 'conversations.replies']);
    expect(slack.calls[2]!.args).toMatchObject({ ts: root.ts, include_all_metadata: true });
  });

  it('sends again, after a pause, when the lost post is not in Slack', async () => {
    const slack = fakeSlack({ write: ['lost', 'lost'] });

    await slack.chat.post('C0MAINTPRD', { text: 'plan' }, { key: 'op-1-root' });

    expect(slack.messages.map(keyOf)).toEqual(['op-1-root']);
    expect(slack.methods()).toEqual([
      'chat.postMessage',
      'conversations.history',
      'chat.postMessage',
      'conversations.history',
      'chat.postMessage',
    ]);
    expect(slack.pauses).toEqual([250, 500]);
  });

  it('waits out a 429 and sends again without looking: Slack wrote nothing', async () => {
    const slack = fakeSlack({ write: ['limited'] });

    await slack.chat.reply('C0MAINTPRD', '1.000001', { text: 'gate' }, { key: 'gates-1-gate-talos' });

    expect(slack.methods()).toEqual(['chat.postMessage', 'chat.postMessage']);
    expect(slack.pauses).toEqual([2000]);
    expect(slack.messages).toHaveLength(1);
  });

  it('never sends again while it cannot look, and throws after the bounded attempts', async () => {
    const slack = fakeSlack({ write: ['lost-after-write'], read: ['lost', 'lost', 'lost', 'lost', 'lost', 'lost'] });

    await expect(slack.chat.post('C0MAINTPRD', { text: 'plan' }, { key: 'op-1-root' })).rejects.toThrow('statusCode = 500');

    expect(slack.methods().filter((m) => m === 'chat.postMessage')).toHaveLength(1);
    expect(slack.messages).toHaveLength(1);
  });

  it('gives up after five sends whose answers were all lost, and a last look', async () => {
    const slack = fakeSlack({ write: ['lost', 'lost', 'lost', 'lost', 'lost'] });

    await expect(slack.chat.post('C0MAINTPRD', { text: 'plan' }, { key: 'op-1-root' })).rejects.toThrow('statusCode = 500');

    expect(slack.methods().filter((m) => m === 'chat.postMessage')).toHaveLength(5);
    expect(slack.methods().at(-1)).toBe('conversations.history');
    expect(slack.messages).toEqual([]);
  });

  it('looks before the first send when the post may be in Slack already, and again for a key that ended in doubt', async () => {
    // Every look of the first post fails: it ends in doubt.
    const slack = fakeSlack({ write: ['lost-after-write'], read: ['lost', 'lost', 'lost', 'lost'] });
    await expect(slack.chat.post('C0MAINTPRD', { text: 'plan' }, { key: 'op-1-root' })).rejects.toThrow('statusCode = 500');
    const before = slack.calls.length;

    const again = await slack.chat.post('C0MAINTPRD', { text: 'plan' }, { key: 'op-1-root' });
    const retried = await slack.chat.post('C0MAINTPRD', { text: 'gate' }, { key: 'health-2-root', maybeSent: true });

    expect(slack.methods().slice(before)).toEqual(['conversations.history', 'conversations.history', 'chat.postMessage']);
    expect(again.ts).toBe(slack.messages[0]!.ts);
    expect(slack.messages.map(keyOf)).toEqual(['op-1-root', 'health-2-root']);
    expect(retried.ts).toBe(slack.messages[1]!.ts);
  });

  it('throws a refusal at once: Slack wrote nothing and says why', async () => {
    const slack = fakeSlack({ write: ['refused'] });

    await expect(slack.chat.post('C0MAINTPRD', { text: 'plan' }, { key: 'op-1-root' })).rejects.toThrow('channel_not_found');

    expect(slack.methods()).toEqual(['chat.postMessage']);
  });

  it('sends a `once` reply a single time and leaves the look to its caller', async () => {
    const slack = fakeSlack({ write: ['lost-after-write'] });

    await expect(slack.chat.reply('C0MAINTPRD', '1.000001', { text: '#3 started' }, { once: true })).rejects.toThrow('statusCode = 500');

    expect(slack.methods()).toEqual(['chat.postMessage']);
  });
});

describe('createSlackChat: upload', () => {
  it('shares a file once when Slack answers 500 after sharing it, found by the file id in the thread', async () => {
    const slack = fakeSlack({ write: ['lost-after-write'] });

    await slack.chat.upload('C0MAINTPRD', '1.000001', {
      filename: 'op-1-maintenance-record.md',
      title: 'Maintenance record op-1',
      content: '# record',
    });

    expect(slack.methods()).toEqual(['files.getUploadURLExternal', 'files.completeUploadExternal', 'conversations.replies']);
    expect(slack.uploads).toEqual(['https://files.example/upload/F1']);
    expect(slack.messages.filter((m) => m.files !== undefined)).toHaveLength(1);
  });
});

describe('writeOutcome', () => {
  it.each([
    [new WebAPIHTTPError(503, 'Service Unavailable', {}, ''), 'lost'],
    [new WebAPIHTTPError(400, 'Bad Request', {}, ''), 'refused'],
    [new WebAPIRequestError(new Error('socket hang up')), 'lost'],
    [new WebAPIRateLimitedError(3), 'limited'],
    [Object.assign(new Error('An API error occurred: invalid_blocks'), { code: 'slack_webapi_platform_error' }), 'refused'],
  ])('reads %s as %s', (error, kind) => {
    expect(writeOutcome(error).kind).toBe(kind);
  });
});
