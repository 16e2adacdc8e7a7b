import { randomBytes, randomUUID } from 'node:crypto';
import { botAuthor, BOT_USER_ID, type EmulatorConfig } from './config.ts';
import type { Directory } from './directory.ts';
import { postSigned, type SigningOptions } from './http-delivery.ts';
import { parseContent } from './message-content.ts';
import type { MessageStore } from './message-store.ts';
import {
  blockActionsPayload,
  type ButtonClickInput,
  isObject,
  type PayloadContext,
  slashCommandPayload,
  type SlashCommandInput,
} from './payloads.ts';
import type { Recorder } from './recorder.ts';
import type { ResponseUrls } from './response-url.ts';
import type { SocketModeHub } from './socket-mode.ts';
import type { DeliveryResult, EnvelopeType, HttpDeliveryResult, JsonObject } from './types.ts';

/** The id at the end of a response URL the emulator issued, `<origin>/response/<id>`. */
const RESPONSE_URL_ID = /\/response\/([^/?#]+)$/;

export interface EventOptions {
  /** Simulates a redelivery, as Slack does for events that were not acked in time. */
  retryAttempt?: number;
  retryReason?: string;
}

export interface UserActionDeps {
  config: EmulatorConfig;
  directory: Directory;
  messages: MessageStore;
  hub: SocketModeHub;
  responses: ResponseUrls;
  recorder: Recorder;
  origin: () => string;
}

/** What a Slack user does, delivered to the bot over Socket Mode or signed HTTP. */
export class UserActions {
  readonly #deps: UserActionDeps;
  /** HTTP deliveries whose response has not come back yet. */
  #httpInFlight = 0;
  /** Response URL ids of slash commands acked empty, so a reply is still to come through them. */
  readonly #awaitingReply = new Set<string>();

  constructor(deps: UserActionDeps) {
    this.#deps = deps;
  }

  /** Deliveries over either transport that are neither acked nor timed out. */
  unackedDeliveries(): number {
    return this.#deps.hub.unackedCount() + this.#httpInFlight;
  }

  /** Slash commands acked empty whose response_url has not been called yet. */
  unansweredCommands(): number {
    const answered = new Set(this.#deps.recorder.responseUrlCalls.map((c) => c.id));
    for (const id of answered) this.#awaitingReply.delete(id);
    return this.#awaitingReply.size;
  }

  async sendSlashCommand(input: SlashCommandInput): Promise<DeliveryResult> {
    const payload = this.#commandPayload(input);
    const result = await this.#deps.hub.deliver('slash_commands', payload, { acceptsResponsePayload: true });
    if (!result.timedOut) this.#applyCommandAck(input, payload, result.payload);
    return result;
  }

  clickButton(input: ButtonClickInput): Promise<DeliveryResult> {
    return this.#deps.hub.deliver('interactive', this.#clickPayload(input), { acceptsResponsePayload: true });
  }

  sendEvent(event: JsonObject, opts: EventOptions = {}): Promise<DeliveryResult> {
    return this.#deps.hub.deliver('events_api', this.#eventPayload(event), { acceptsResponsePayload: false, ...opts });
  }

  /** An Events API delivery over HTTP: the JSON `event_callback`, signed, with Slack's retry headers on a redelivery. */
  async sendEventHttp(url: string, event: JsonObject, opts: EventOptions & SigningOptions = {}): Promise<HttpDeliveryResult> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (opts.retryAttempt !== undefined && opts.retryAttempt > 0) {
      headers['x-slack-retry-num'] = String(opts.retryAttempt);
      headers['x-slack-retry-reason'] = opts.retryReason ?? 'http_timeout';
    }
    return (await this.#postHttp(url, JSON.stringify(this.#eventPayload(event)), 'events_api', opts, headers)).result;
  }

  #eventPayload(event: JsonObject): JsonObject {
    const { config } = this.#deps;
    return {
      token: config.verificationToken,
      team_id: config.teamId,
      api_app_id: config.appId,
      event: { event_ts: this.#deps.messages.nextTs(), ...event },
      type: 'event_callback',
      event_id: `Ev${randomBytes(5).toString('hex').toUpperCase()}`,
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [{ enterprise_id: null, team_id: config.teamId, user_id: BOT_USER_ID, is_bot: true, is_enterprise_install: false }],
      is_ext_shared_channel: false,
    };
  }

  async sendSlashCommandHttp(url: string, input: SlashCommandInput & SigningOptions): Promise<HttpDeliveryResult> {
    const command = this.#commandPayload(input);
    const body = new URLSearchParams(command).toString();
    const { result, payload } = await this.#postHttp(url, body, 'slash_commands', input);
    if (payload !== undefined) this.#applyCommandAck(input, command, payload);
    return result;
  }

  async clickButtonHttp(url: string, input: ButtonClickInput & SigningOptions): Promise<HttpDeliveryResult> {
    const body = new URLSearchParams({ payload: JSON.stringify(this.#clickPayload(input)) }).toString();
    return (await this.#postHttp(url, body, 'interactive', input)).result;
  }

  #commandPayload(input: SlashCommandInput): Record<string, string> {
    const { origin, responses } = this.#deps;
    const responseUrl = responses.issue(origin(), { channel: input.channel, user: input.user });
    return slashCommandPayload(this.#payloadContext(), input, responseUrl);
  }

  #clickPayload(input: ButtonClickInput): JsonObject {
    const { origin, responses, messages } = this.#deps;
    const message = messages.get(input.channel, input.messageTs);
    const responseUrl = responses.issue(origin(), { channel: input.channel, user: input.user, messageTs: input.messageTs });
    return blockActionsPayload(this.#payloadContext(), input, message, responseUrl, messages.nextTs());
  }

  /** Over HTTP the ack is the response body; a 200 with a body is recorded like a Socket Mode ack. */
  async #postHttp(
    url: string,
    body: string,
    type: EnvelopeType,
    signing: SigningOptions,
    headers?: Record<string, string>,
  ): Promise<{ result: HttpDeliveryResult; payload: JsonObject | undefined }> {
    const startedAt = Date.now();
    this.#httpInFlight += 1;
    let result: HttpDeliveryResult;
    try {
      result = await postSigned(url, body, this.#deps.config.signingSecret, signing, headers);
    } finally {
      this.#httpInFlight -= 1;
    }
    this.#deps.recorder.traffic(result.body);
    if (result.status !== 200) return { result, payload: undefined };
    const payload = parseAckBody(result.body);
    this.#deps.recorder.acks.push({
      envelopeId: `http-${randomUUID()}`,
      type,
      payload,
      ackedInMs: Date.now() - startedAt,
      transport: 'http',
      late: false,
    });
    return { result, payload };
  }

  /**
   * A slash command's ack body is its reply: ephemeral unless `response_type` is `in_channel`.
   * An empty ack means the reply is still to come through the command's response_url.
   */
  #applyCommandAck(input: SlashCommandInput, command: Record<string, string>, payload: JsonObject): void {
    if (Object.keys(payload).length === 0) {
      const id = RESPONSE_URL_ID.exec(command.response_url ?? '')?.[1];
      if (id !== undefined) this.#awaitingReply.add(id);
      return;
    }
    const parsed = parseContent(payload);
    if (!parsed.ok) return;
    const { text, blocks } = parsed.content;
    const { messages, config } = this.#deps;
    if (payload.response_type === 'in_channel') {
      messages.post(input.channel, { text, ...(blocks ? { blocks } : {}), ...botAuthor(config) });
      return;
    }
    messages.addEphemeral({ channel: input.channel, user: input.user, text, ...(blocks ? { blocks } : {}), source: 'ack' });
  }

  #payloadContext(): PayloadContext {
    return { config: this.#deps.config, directory: this.#deps.directory };
  }
}

function parseAckBody(body: string): JsonObject {
  if (body.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(body);
    return isObject(parsed) ? parsed : { text: body };
  } catch {
    // Bolt answers a string ack as plain text.
    return { text: body };
  }
}
