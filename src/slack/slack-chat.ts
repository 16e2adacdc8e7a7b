// The Slack Web API adapter behind the chat port: the one module under src/ besides main.ts that
// imports the Slack SDK. The composition root builds it; jobs/ and the rest of src/ only see the port.
import { WebAPIHTTPError, WebAPIRequestError, WebClientEvent, type WebClient } from '@slack/web-api';
import type { ChatMessage, ChatPort, ReplyOptions } from '../port/chat-port.ts';
import { scrubValues, type SecretScrubber } from '../log/secret-scrubber.ts';
import { writeOnce, type WriteOnceOptions } from './write-once.ts';

/** Retries for Slack calls: enough to ride out a 429 or a brief outage, bounded so a job never hangs for half an hour. */
export const SLACK_RETRY = { retries: 5, factor: 2, minTimeout: 200, maxTimeout: 10_000 };

/** Everything that leaves for Slack passes the scrubber first: a secret in a tool's output never reaches a channel. */
function clean(scrubber: SecretScrubber, message: ChatMessage): { text: string; blocks?: ChatMessage['blocks'] } {
  const text = scrubber.scrub(message.text);
  if (message.blocks === undefined) return { text };
  // Each string as it is, not the JSON text: a secret with a `"` or a `\` is written escaped there, and a blank cut inside an escape breaks the JSON.
  return { text, blocks: scrubValues(message.blocks, (s) => scrubber.scrub(s)) };
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
  client.on(WebClientEvent.RATE_LIMITED, (_retryAfterSeconds: number, request: { url?: string }) =>
    record(slackMethodOf(request.url ?? '')),
  );
}

export interface SlackChatHooks {
  /** A call that failed after the client's retries, with its Web API method and `slackErrorName`. */
  onError?: (method: string, error: string) => void;
  /**
   * The client for writes that must not be repeated blindly (keyed posts, `once` replies, file
   * shares): no retries of its own (`retryConfig: { retries: 0 }`), 429s thrown
   * (`rejectRateLimitedCalls`), a `timeout`. Default: `client`.
   */
  onceClient?: WebClient;
  /** Sends a file's bytes to its upload URL. Default: the global `fetch`. */
  fetch?: typeof fetch;
  /** Bound of one send of a file's bytes, in ms. Default 30 000. */
  uploadTimeoutMs?: number;
  /** Attempts and backoff of exactly-once writes; see `writeOnce`. */
  writeOnce?: WriteOnceOptions;
  /** Milliseconds since the epoch, for the look-up window. Default `Date.now`. */
  now?: () => number;
}

/** How far back a write's result is looked for: its earlier attempts, those of a job run again included. */
export const LOOKBACK_MS = 15 * 60_000;
/** Pages read per look-up, newest first: a busy channel's last minutes, not its history. */
const LOOKUP_PAGES = 5;
/** Keys whose last post ended in doubt, remembered so that the next post with that key looks first. */
const DOUBTFUL_KEYS = 1000;

interface Posted {
  ts?: string;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
  files?: { id?: string }[];
}

const carriesKey =
  (key: string) =>
  (m: Posted): boolean =>
    m.metadata?.event_type === POST_KEY_EVENT && m.metadata.event_payload?.['key'] === key;

/** Sends bytes to an upload URL (no token: the URL is the credential), throwing the SDK's errors so a lost answer reads as one. */
async function sendBytes(fetchFn: typeof fetch, url: string, bytes: Buffer, timeoutMs: number): Promise<void> {
  let response: Response;
  try {
    response = await fetchFn(url, {
      method: 'POST',
      body: new Uint8Array(bytes),
      headers: { 'content-type': 'application/octet-stream' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.arrayBuffer();
  } catch (error) {
    throw new WebAPIRequestError(error instanceof Error ? error : new Error(String(error)));
  }
  if (!response.ok) throw new WebAPIHTTPError(response.status, response.statusText, Object.fromEntries(response.headers.entries()), '');
}

/**
 * The chat port on Slack's Web API. Posts with a key are exactly once: a lost answer (5xx,
 * timeout) is followed by a look for the key in the channel or thread, and the message found
 * is adopted; only when none is there is the post sent again. Edits go through the retrying
 * client: an edit repeated after a lost answer writes the same content again.
 */
export function createSlackChat(client: WebClient, scrubber: SecretScrubber, hooks: SlackChatHooks = {}): ChatPort {
  const onceClient = hooks.onceClient ?? client;
  const now = hooks.now ?? Date.now;
  const doubtful = new Set<string>();
  const call = async <T>(method: string, send: () => Promise<T>): Promise<T> => {
    try {
      return await send();
    } catch (error) {
      hooks.onError?.(method, slackErrorName(error));
      throw error;
    }
  };
  const oldest = (): string => ((now() - LOOKBACK_MS) / 1000).toFixed(6);

  /** The newest message of the look-up window that `matches`: top-level posts when `threadTs` is undefined, else the thread's replies. */
  const findPosted = async (
    channel: string,
    threadTs: string | undefined,
    matches: (m: Posted) => boolean,
  ): Promise<string | undefined> => {
    let cursor: string | undefined;
    let found: string | undefined;
    for (let page = 0; page < LOOKUP_PAGES; page += 1) {
      const common = { channel, oldest: oldest(), include_all_metadata: true, ...(cursor ? { cursor } : {}) };
      if (threadTs === undefined) {
        // Newest first: the first match is the newest.
        const history = await client.conversations.history({ ...common, limit: 100 });
        const hit = (history.messages as Posted[] | undefined)?.find(matches);
        if (hit?.ts !== undefined) return hit.ts;
        cursor = history.response_metadata?.next_cursor || undefined;
      } else {
        // Oldest first: the last match is the newest.
        const replies = await client.conversations.replies({ ...common, ts: threadTs, limit: 200 });
        const hit = (replies.messages as Posted[] | undefined)?.filter((m) => m.ts !== threadTs && matches(m)).at(-1);
        if (hit?.ts !== undefined) found = hit.ts;
        cursor = replies.response_metadata?.next_cursor || undefined;
      }
      if (cursor === undefined) break;
    }
    return found;
  };

  const postMessage = async (
    args: Record<string, unknown> & { channel: string; thread_ts?: string },
    options: ReplyOptions,
  ): Promise<string> => {
    const { key } = options;
    const send = async (sender: WebClient) =>
      tsOf(await sender.chat.postMessage({ ...args, ...keyed(key) } as Parameters<WebClient['chat']['postMessage']>[0]));
    // A caller that reconciles by itself (the audit): one send, a 429 waited out.
    if (options.once === true) return writeOnce({ send: () => send(onceClient) }, hooks.writeOnce);
    if (key === undefined) return send(client);
    try {
      const ts = await writeOnce(
        {
          send: () => send(onceClient),
          find: () => findPosted(args.channel, args.thread_ts, carriesKey(key)),
          maybeSent: options.maybeSent === true || doubtful.has(key),
        },
        hooks.writeOnce,
      );
      doubtful.delete(key);
      return ts;
    } catch (error) {
      doubtful.add(key);
      if (doubtful.size > DOUBTFUL_KEYS) doubtful.delete(doubtful.values().next().value!);
      throw error;
    }
  };

  return {
    async post(channel, message, options = {}) {
      return { ts: await call('chat.postMessage', () => postMessage({ channel, ...clean(scrubber, message) }, options)) };
    },
    async reply(channel, threadTs, message, options = {}) {
      const args = {
        channel,
        thread_ts: threadTs,
        ...clean(scrubber, message),
        ...(options.broadcast === true ? { reply_broadcast: true } : {}),
      };
      return { ts: await call('chat.postMessage', () => postMessage(args, options)) };
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
        const page = await call('conversations.replies', () =>
          client.conversations.replies({ channel, ts: threadTs, limit: 200, ...(cursor ? { cursor } : {}) }),
        );
        for (const m of page.messages ?? []) {
          if (m.ts !== undefined && m.ts !== threadTs && m.bot_id !== undefined) out.push({ ts: m.ts, text: m.text ?? '' });
        }
        cursor = page.response_metadata?.next_cursor || undefined;
      } while (cursor !== undefined);
      return out;
    },
    async update(channel, ts, message) {
      await call('chat.update', () =>
        client.chat.update({ channel, ts, ...clean(scrubber, message) } as Parameters<WebClient['chat']['update']>[0]),
      );
    },
    async ephemeral(channel, user, message) {
      await call('chat.postEphemeral', () =>
        client.chat.postEphemeral({ channel, user, ...clean(scrubber, message) } as Parameters<WebClient['chat']['postEphemeral']>[0]),
      );
    },
    async upload(channel, threadTs, file) {
      // The three steps of an external upload, so that the one that shares the file (and can
      // be applied without an answer) is sent once: reserving and sending bytes show nothing.
      const bytes = Buffer.from(scrubber.scrub(file.content), 'utf8');
      const reserved = await call('files.getUploadURLExternal', () =>
        client.files.getUploadURLExternal({ filename: file.filename, length: bytes.length }),
      );
      const { upload_url: url, file_id: id } = reserved;
      if (url === undefined || id === undefined) throw new Error('files.getUploadURLExternal answered without an upload URL');
      const fetchFn = hooks.fetch ?? fetch;
      // Sending the bytes again overwrites them: after a lost answer it is simply repeated.
      await call('files.upload', () =>
        writeOnce(
          { send: () => sendBytes(fetchFn, url, bytes, hooks.uploadTimeoutMs ?? 30_000), find: async () => undefined },
          hooks.writeOnce,
        ),
      );
      await call('files.completeUploadExternal', () =>
        writeOnce(
          {
            send: () =>
              onceClient.files.completeUploadExternal({ files: [{ id, title: file.title }], channel_id: channel, thread_ts: threadTs }),
            find: async () =>
              (await findPosted(channel, threadTs, (m) => m.files?.some((f) => f.id === id) === true)) === undefined
                ? undefined
                : { ok: true },
          },
          hooks.writeOnce,
        ),
      );
    },
  };
}
