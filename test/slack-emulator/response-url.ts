import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BOT_USER_ID, botAuthor, type EmulatorConfig } from './config.ts';
import { parseContent } from './message-content.ts';
import type { MessageStore } from './message-store.ts';
import { isObject } from './payloads.ts';
import type { Recorder } from './recorder.ts';
import { readRawBody } from './request-body.ts';
import type { JsonObject } from './types.ts';

/** Slack allows five uses of a response_url within thirty minutes. */
const MAX_USES = 5;
const LIFETIME_MS = 30 * 60 * 1000;

export interface ResponseTarget {
  channel: string;
  user: string;
  /** The message a button was clicked on; absent for slash commands. */
  messageTs?: string;
}

interface Issued extends ResponseTarget {
  uses: number;
  issuedAt: number;
}

/** `POST /response/:id`, the emulator's stand-in for `hooks.slack.com` response URLs. */
export class ResponseUrls {
  readonly #config: EmulatorConfig;
  readonly #messages: MessageStore;
  readonly #recorder: Recorder;
  readonly #issued = new Map<string, Issued>();

  constructor(config: EmulatorConfig, messages: MessageStore, recorder: Recorder) {
    this.#config = config;
    this.#messages = messages;
    this.#recorder = recorder;
  }

  issue(origin: string, target: ResponseTarget): string {
    const id = randomBytes(12).toString('hex');
    this.#issued.set(id, { ...target, uses: 0, issuedAt: Date.now() });
    return `${origin}/response/${id}`;
  }

  async handle(req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
    const raw = (await readRawBody(req)).toString('utf8');
    this.#recorder.traffic(raw);
    let body: JsonObject = {};
    try {
      const parsed: unknown = JSON.parse(raw);
      if (isObject(parsed)) body = parsed;
    } catch {
      return this.#reply(res, id, body, 400, 'invalid_payload');
    }
    const target = this.#issued.get(id);
    if (target === undefined) return this.#reply(res, id, body, 404, 'no_service');
    if (Date.now() - target.issuedAt > LIFETIME_MS) return this.#reply(res, id, body, 404, 'expired_url');
    if (target.uses >= MAX_USES) return this.#reply(res, id, body, 404, 'used_too_many_times');
    target.uses += 1;
    const error = this.#apply(target, body);
    return this.#reply(res, id, body, error === undefined ? 200 : 400, error);
  }

  #apply(target: Issued, body: JsonObject): string | undefined {
    if (body.delete_original === true && target.messageTs !== undefined) {
      this.#messages.delete(target.channel, target.messageTs);
      return undefined;
    }
    const parsed = parseContent(body);
    if (!parsed.ok) return typeof parsed.reply.error === 'string' ? parsed.reply.error : 'invalid_payload';
    const { text, blocks } = parsed.content;
    const threadTs = typeof body.thread_ts === 'string' ? body.thread_ts : undefined;
    if (body.replace_original === true && target.messageTs !== undefined) {
      // A replacement is a whole new message: blocks that are not resent disappear.
      const updated = this.#messages.update(target.channel, target.messageTs, {
        text,
        blocks: blocks ?? [],
        editor: BOT_USER_ID,
        source: 'response_url',
      });
      return updated === undefined ? 'message_not_found' : undefined;
    }
    if (body.response_type === 'in_channel') {
      this.#messages.post(target.channel, { text, ...(blocks ? { blocks } : {}), ...botAuthor(this.#config), thread_ts: threadTs });
      return undefined;
    }
    this.#messages.addEphemeral({
      channel: target.channel,
      user: target.user,
      text,
      ...(blocks ? { blocks } : {}),
      ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      source: 'response_url',
    });
    return undefined;
  }

  #reply(res: ServerResponse, id: string, body: JsonObject, status: number, error?: string): void {
    this.#recorder.responseUrlCalls.push({ id, body, status, at: Date.now() });
    const reply = error === undefined ? { ok: true } : { ok: false, error };
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
  }
}
