import { WebClient, WebClientEvent } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { createSlackChat, onSlackRateLimited, slackErrorName, slackMethodOf } from '../../src/slack/slack-chat.ts';
import { SecretScrubber } from '../../src/log/secret-scrubber.ts';

function platformError(error: string): Error {
  return Object.assign(new Error(`An API error occurred: ${error}`), { code: 'slack_webapi_platform_error', data: { ok: false, error } });
}

/** A WebClient whose calls fail as Slack would answer them. */
function failingClient(error: Error): WebClient {
  const reject = (): Promise<never> => Promise.reject(error);
  return { chat: { postMessage: reject, update: reject, postEphemeral: reject }, filesUploadV2: reject } as unknown as WebClient;
}

describe('createSlackChat', () => {
  it('reports a failed call with its Web API method and Slack\'s error, and still throws it', async () => {
    const errors: [string, string][] = [];
    const chat = createSlackChat(failingClient(platformError('channel_not_found')), new SecretScrubber(), { onError: (method, error) => errors.push([method, error]) });

    await expect(chat.reply('C0MAINTPRD', '1.000', { text: 'hi' })).rejects.toThrow('channel_not_found');
    await expect(chat.update('C0MAINTPRD', '1.000', { text: 'hi' })).rejects.toThrow('channel_not_found');
    await expect(chat.upload('C0MAINTPRD', '1.000', { filename: 'a.md', title: 'a', content: 'x' })).rejects.toThrow('channel_not_found');

    expect(errors).toEqual([
      ['chat.postMessage', 'channel_not_found'],
      ['chat.update', 'channel_not_found'],
      ['files.uploadV2', 'channel_not_found'],
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
