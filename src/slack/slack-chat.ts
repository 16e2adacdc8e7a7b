// The Slack Web API adapter behind the chat port: the one module under src/ besides main.ts that
// imports the Slack SDK. The composition root builds it; jobs/ and the rest of src/ only see the port.
import { WebClientEvent, type WebClient } from '@slack/web-api';
import type { ChatMessage, ChatPort } from '../chat/chat-port.ts';
import type { SecretScrubber } from '../log/secret-scrubber.ts';

/** Retries for Slack calls: enough to ride out a 429 or a brief outage, bounded so a job never hangs for half an hour. */
export const SLACK_RETRY = { retries: 5, factor: 2, minTimeout: 200, maxTimeout: 10_000 };

/** Everything that leaves for Slack passes the scrubber first: a secret in a tool's output never reaches a channel. */
function clean(scrubber: SecretScrubber, message: ChatMessage): { text: string; blocks?: ChatMessage['blocks'] } {
  const text = scrubber.scrub(message.text);
  if (message.blocks === undefined) return { text };
  return { text, blocks: JSON.parse(scrubber.scrub(JSON.stringify(message.blocks))) as ChatMessage['blocks'] };
}

function tsOf(response: { ts?: string }): string {
  if (response.ts === undefined) throw new Error('Slack returned no message ts');
  return response.ts;
}

/**
 * A bounded name for a failed call: Slack's own error for a platform error
 * (`channel_not_found`), the HTTP status for an HTTP error, else the SDK's error code.
 */
export function slackErrorName(error: unknown): string {
  const { code, data, statusCode } = (error ?? {}) as { code?: unknown; data?: { error?: unknown }; statusCode?: unknown };
  if (code === 'slack_webapi_platform_error' && typeof data?.error === 'string') return data.error;
  if (code === 'slack_webapi_http_error' && typeof statusCode === 'number') return `http_${statusCode}`;
  if (typeof code === 'string') return code.replace(/^slack_webapi_/, '');
  return 'unknown';
}

/** The Web API method of a request URL (`…/api/chat.postMessage`); file-upload URLs are one method. */
export function slackMethodOf(url: string): string {
  const last = url.split('?')[0]?.split('/').pop() ?? '';
  return /^[a-z]+(\.[a-zA-Z]+)+$/.test(last) ? last : 'files.upload';
}

/** The event type of the metadata every keyed post carries. */
export const POST_KEY_EVENT = 'talos_chatops_post';

/** Message metadata that names a post, so it can be found again when its answer was lost. */
function keyed(key: string | undefined): { metadata?: { event_type: string; event_payload: { key: string } } } {
  return key === undefined ? {} : { metadata: { event_type: POST_KEY_EVENT, event_payload: { key } } };
}

/** Counts Slack's 429 answers; the client waits out `Retry-After` and retries by itself. */
export function onSlackRateLimited(client: WebClient, record: (method: string) => void): void {
  client.on(WebClientEvent.RATE_LIMITED, (_retryAfterSeconds: number, request: { url?: string }) => record(slackMethodOf(request.url ?? '')));
}

export interface SlackChatHooks {
  /** A call that failed after the client's retries, with its Web API method and `slackErrorName`. */
  onError?: (method: string, error: string) => void;
  /** A client that never retries, for `reply(…, { once: true })`. Default: `client`, which retries. */
  onceClient?: WebClient;
}

/** The chat port on Slack's Web API. */
export function createSlackChat(client: WebClient, scrubber: SecretScrubber, hooks: SlackChatHooks = {}): ChatPort {
  const call = async <T>(method: string, send: () => Promise<T>): Promise<T> => {
    try {
      return await send();
    } catch (error) {
      hooks.onError?.(method, slackErrorName(error));
      throw error;
    }
  };
  return {
    async post(channel, message, options = {}) {
      const response = await call('chat.postMessage', () =>
        client.chat.postMessage({ channel, ...clean(scrubber, message), ...keyed(options.key) } as Parameters<WebClient['chat']['postMessage']>[0]),
      );
      return { ts: tsOf(response) };
    },
    async reply(channel, threadTs, message, options = {}) {
      const sender = options.once === true ? (hooks.onceClient ?? client) : client;
      const response = await call('chat.postMessage', () =>
        sender.chat.postMessage({
          channel,
          thread_ts: threadTs,
          ...clean(scrubber, message),
          ...keyed(options.key),
          ...(options.broadcast === true ? { reply_broadcast: true } : {}),
        } as Parameters<WebClient['chat']['postMessage']>[0]),
      );
      return { ts: tsOf(response) };
    },
    async permalink(channel, ts) {
      const response = await call('chat.getPermalink', () => client.chat.getPermalink({ channel, message_ts: ts }));
      if (typeof response.permalink !== 'string') throw new Error('chat.getPermalink answered without a permalink');
      return response.permalink;
    },
    async replies(channel, threadTs) {
      const out: { ts: string; text: string }[] = [];
      let cursor: string | undefined;
      do {
        const page = await call('conversations.replies', () => client.conversations.replies({ channel, ts: threadTs, limit: 200, ...(cursor ? { cursor } : {}) }));
        for (const m of page.messages ?? []) {
          if (m.ts !== undefined && m.ts !== threadTs && m.bot_id !== undefined) out.push({ ts: m.ts, text: m.text ?? '' });
        }
        cursor = page.response_metadata?.next_cursor || undefined;
      } while (cursor !== undefined);
      return out;
    },
    async update(channel, ts, message) {
      await call('chat.update', () => client.chat.update({ channel, ts, ...clean(scrubber, message) } as Parameters<WebClient['chat']['update']>[0]));
    },
    async ephemeral(channel, user, message) {
      await call('chat.postEphemeral', () => client.chat.postEphemeral({ channel, user, ...clean(scrubber, message) } as Parameters<WebClient['chat']['postEphemeral']>[0]));
    },
    async upload(channel, threadTs, file) {
      await call('files.uploadV2', () =>
        client.filesUploadV2({
          channel_id: channel,
          thread_ts: threadTs,
          filename: file.filename,
          title: file.title,
          content: scrubber.scrub(file.content),
        }),
      );
    },
  };
}
