import { randomBytes, randomUUID } from 'node:crypto';
import { botAuthor, BOT_ID, BOT_USER_ID, type EmulatorConfig } from './config.ts';
import type { Directory } from './directory.ts';
import { postSigned, type SigningOptions } from './http-delivery.ts';
import { parseContent } from './message-content.ts';
import type { MessageStore } from './message-store.ts';
import {
  blockActionsPayload,
  type ButtonClickInput,
  findButton,
  type HomeClickInput,
  isObject,
  type PayloadContext,
  slashCommandPayload,
  type SlashCommandInput,
  viewBlockActionsPayload,
  viewClosedPayload,
  type ViewClickInput,
  type ViewInput,
  type ViewSubmitOptions,
  viewSubmissionPayload,
} from './payloads.ts';
import { modalViewErrors } from './methods-views.ts';
import { type ModalStore, type OpenedModal, statefulElements, type TriggerStore, type ViewStore } from './view-store.ts';
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
  modals: ModalStore;
  triggers: TriggerStore;
  views: ViewStore;
}

/** What the user sees after pressing a modal's submit button. */
export interface ViewSubmitResult {
  /**
   * `closed`: the bot acked empty (or `clear`); `errors`: it answered `response_action: errors`, the modal stays open;
   * `updated`: it answered `response_action: update`; `missing_required`: Slack's client refused to send (a required
   * input is empty), nothing was delivered; `no_ack`: no ack in time, the modal stays open with Slack's error;
   * `invalid_ack`: the ack was not one Slack accepts (errors naming no input block, a bad view), the modal stays open.
   */
  outcome: 'closed' | 'errors' | 'updated' | 'missing_required' | 'no_ack' | 'invalid_ack';
  /** The bot's errors (`errors`) or the client's (`missing_required`), by block_id. */
  errors: Record<string, string>;
  ack?: JsonObject;
  delivery?: DeliveryResult;
}

/** What a Slack user does, delivered to the bot over Socket Mode or signed HTTP. */
export class UserActions {
  readonly #deps: UserActionDeps;
  /** HTTP deliveries whose response has not come back yet. */
  #httpInFlight = 0;
  /** Response URL ids of slash commands acked empty, so a reply is still to come through them, with each command's trigger id. */
  readonly #awaitingReply = new Map<string, string>();

  constructor(deps: UserActionDeps) {
    this.#deps = deps;
  }

  /** Deliveries over either transport that are neither acked nor timed out. */
  unackedDeliveries(): number {
    return this.#deps.hub.unackedCount() + this.#httpInFlight;
  }

  /** Slash commands acked empty whose response_url has not been called yet, nor a modal opened with their trigger. */
  unansweredCommands(): number {
    const answered = new Set(this.#deps.recorder.responseUrlCalls.map((c) => c.id));
    for (const [id, trigger] of this.#awaitingReply) {
      if (answered.has(id) || this.#deps.triggers.exchanged(trigger)) this.#awaitingReply.delete(id);
    }
    return this.#awaitingReply.size;
  }

  async sendSlashCommand(input: SlashCommandInput): Promise<DeliveryResult> {
    const payload = this.#commandPayload(input);
    this.#deps.triggers.issue(payload.trigger_id!, input.user);
    const result = await this.#deps.hub.deliver('slash_commands', payload, { acceptsResponsePayload: true });
    if (!result.timedOut) this.#applyCommandAck(input, payload, result.payload);
    return result;
  }

  clickButton(input: ButtonClickInput): Promise<DeliveryResult> {
    const payload = this.#clickPayload(input);
    this.#deps.triggers.issue(String(payload.trigger_id), input.user);
    return this.#deps.hub.deliver('interactive', payload, { acceptsResponsePayload: true });
  }

  /**
   * The user fills the modal's inputs with `values` and presses its submit button. Slack's client
   * refuses to send while a required input is empty; otherwise the bot gets `view_submission`, and
   * its ack decides whether the modal closes, shows errors or changes.
   */
  async submitView(user: string, viewId: string, values: ViewInput = {}, opts: ViewSubmitOptions = {}): Promise<ViewSubmitResult> {
    const modal = this.#openModal(user, viewId);
    if (modal.view.submit === null) throw new Error(`submitView: view ${viewId} has no submit button`);
    for (const [blockId, value] of Object.entries(values)) enter(modal, blockId, value);
    // A forged payload (`stateValues`) never went through the client that checks required inputs.
    const missing = opts.stateValues === undefined ? missingRequired(modal.view) : {};
    if (Object.keys(missing).length > 0) return { outcome: 'missing_required', errors: missing };
    const view = structuredClone(modal.view);
    if (opts.privateMetadata !== undefined) view.private_metadata = opts.privateMetadata;
    if (opts.stateValues !== undefined) view.state = { values: opts.stateValues };
    const payload = viewSubmissionPayload(this.#payloadContext(), user, view);
    this.#deps.triggers.issue(String(payload.trigger_id), user);
    const delivery = await this.#deps.hub.deliver('interactive', payload, { acceptsResponsePayload: true });
    if (delivery.timedOut) return { outcome: 'no_ack', errors: {}, delivery };
    return { ...this.#applySubmitAck(modal, delivery.payload), ack: delivery.payload, delivery };
  }

  /** The user closes the modal (its close button or ×); the bot hears of it only when the view asked (`notify_on_close`). */
  async closeView(user: string, viewId: string): Promise<DeliveryResult | undefined> {
    const modal = this.#openModal(user, viewId);
    this.#deps.modals.end(viewId, 'closed');
    if (modal.view.notify_on_close !== true) return undefined;
    return this.#deps.hub.deliver('interactive', viewClosedPayload(this.#payloadContext(), user, structuredClone(modal.view)), {
      acceptsResponsePayload: false,
    });
  }

  /** A click on a button (or a choice in a select) of an actions block or section inside an open modal. */
  clickInView(input: ViewClickInput): Promise<DeliveryResult> {
    const modal = this.#openModal(input.user, input.viewId);
    const blocks = (modal.view.blocks as JsonObject[] | undefined) ?? [];
    const found = findButton(blocks, input.actionId, input.blockId);
    if (found === undefined) throw new Error(`clickInView: no element ${input.actionId} in view ${input.viewId}`);
    const { element } = found;
    const action: JsonObject = {
      type: element.type,
      action_id: input.actionId,
      block_id: found.blockId,
      action_ts: this.#deps.messages.nextTs(),
    };
    if (element.type === 'button') {
      action.text = element.text;
      const value = input.value ?? (typeof element.value === 'string' ? element.value : undefined);
      if (value !== undefined) action.value = value;
    } else if (element.type === 'static_select') {
      const option = offered(element, input.value ?? '');
      action.selected_option = option;
      const state = (modal.view.state as { values: Record<string, Record<string, JsonObject>> }).values;
      (state[String(found.blockId)] ??= {})[input.actionId] = { type: 'static_select', selected_option: option };
    } else {
      throw new Error(`clickInView: ${String(element.type)} sends no block_actions without dispatch_action`);
    }
    const payload = viewBlockActionsPayload(this.#payloadContext(), input.user, structuredClone(modal.view), action);
    this.#deps.triggers.issue(String(payload.trigger_id), input.user);
    return this.#deps.hub.deliver('interactive', payload, { acceptsResponsePayload: true });
  }

  /**
   * A click on a button of the user's Home tab, as last published for them. Like a modal's, the
   * block_actions' container is the view, and it carries no channel and no response_url.
   */
  clickInHome(input: HomeClickInput): Promise<DeliveryResult> {
    const view = this.#deps.views.home(input.user);
    if (view === undefined) throw new Error(`clickInHome: no Home published for ${input.user}`);
    const found = findButton((view.blocks as JsonObject[] | undefined) ?? [], input.actionId, input.blockId);
    if (found === undefined) throw new Error(`clickInHome: no element ${input.actionId} in ${input.user}'s Home`);
    const { element } = found;
    // The other elements need state this emulator does not keep for a Home; the bot's Home has only buttons.
    if (element.type !== 'button') throw new Error(`clickInHome: ${String(element.type)} is not supported in a Home`);
    const action: JsonObject = {
      type: 'button',
      action_id: input.actionId,
      block_id: found.blockId,
      action_ts: this.#deps.messages.nextTs(),
      text: element.text,
    };
    const value = input.value ?? (typeof element.value === 'string' ? element.value : undefined);
    if (value !== undefined) action.value = value;
    const payload = viewBlockActionsPayload(this.#payloadContext(), input.user, structuredClone(view), action);
    this.#deps.triggers.issue(String(payload.trigger_id), input.user);
    return this.#deps.hub.deliver('interactive', payload, { acceptsResponsePayload: false });
  }

  #openModal(user: string, viewId: string): OpenedModal {
    const modal = this.#deps.modals.get(viewId);
    if (modal === undefined || !modal.open) throw new Error(`no open modal ${viewId}`);
    if (modal.user !== user) throw new Error(`modal ${viewId} is open for ${modal.user}, not ${user}`);
    return modal;
  }

  /** What Slack does with a `view_submission` ack (the reference's response_action values). */
  #applySubmitAck(modal: OpenedModal, ack: JsonObject): Pick<ViewSubmitResult, 'outcome' | 'errors'> {
    const action = ack.response_action;
    if (action === undefined) {
      this.#deps.modals.end(modal.viewId, 'submitted');
      return { outcome: 'closed', errors: {} };
    }
    if (action === 'errors') {
      const errors = isObject(ack.errors) ? (ack.errors as Record<string, unknown>) : {};
      const inputs = new Set(((modal.view.blocks as JsonObject[]) ?? []).filter((b) => b.type === 'input').map((b) => String(b.block_id)));
      const named = Object.entries(errors).filter(([id, text]) => inputs.has(id) && typeof text === 'string');
      if (named.length === 0 || named.length !== Object.keys(errors).length) return { outcome: 'invalid_ack', errors: {} };
      const shown = Object.fromEntries(named) as Record<string, string>;
      modal.errors.push(shown);
      return { outcome: 'errors', errors: shown };
    }
    if (action === 'update') {
      const view = isObject(ack.view) ? ack.view : undefined;
      if (view === undefined || modalViewErrors(view).length > 0) return { outcome: 'invalid_ack', errors: {} };
      this.#deps.modals.update(modal.viewId, view, { teamId: this.#deps.config.teamId, appId: this.#deps.config.appId, botId: BOT_ID });
      return { outcome: 'updated', errors: {} };
    }
    if (action === 'clear') {
      for (const other of this.#deps.modals.list(modal.user)) if (other.open) this.#deps.modals.end(other.viewId, 'cleared');
      return { outcome: 'closed', errors: {} };
    }
    return { outcome: 'invalid_ack', errors: {} };
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
      if (id !== undefined) this.#awaitingReply.set(id, command.trigger_id ?? '');
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

/** The user's entry in one input of a modal, checked as the client allows it (only offered options can be chosen). */
function enter(modal: OpenedModal, blockId: string, value: string | string[] | null): void {
  const block = ((modal.view.blocks as JsonObject[]) ?? []).find((b) => b.block_id === blockId);
  const element = block === undefined ? undefined : statefulElements(block)[0];
  if (element === undefined) throw new Error(`submitView: no input in block ${blockId} of view ${modal.viewId}`);
  const values = (modal.view.state as { values: Record<string, Record<string, JsonObject>> }).values;
  const slot = (values[blockId] ??= {});
  const actionId = String(element.action_id);
  switch (element.type) {
    case 'plain_text_input':
      if (Array.isArray(value)) throw new Error(`submitView: ${blockId} takes a text`);
      slot[actionId] = { type: element.type, value: value === '' ? null : value };
      return;
    case 'checkboxes':
    case 'multi_static_select': {
      const chosen = value === null ? [] : Array.isArray(value) ? value : [value];
      slot[actionId] = { type: element.type, selected_options: chosen.map((v) => offered(element, v)) };
      return;
    }
    default:
      if (Array.isArray(value)) throw new Error(`submitView: ${blockId} takes one option`);
      slot[actionId] = { type: element.type, selected_option: value === null ? null : offered(element, value) };
  }
}

/** The option of `element` with this value; a client offers no other. */
function offered(element: JsonObject, value: string): JsonObject {
  const options = Array.isArray(element.options) ? (element.options as JsonObject[]) : [];
  const option = options.find((o) => o.value === value);
  if (option === undefined) {
    throw new Error(
      `the ${String(element.action_id)} input offers no option ${value} (offered: ${options.map((o) => String(o.value)).join(', ')})`,
    );
  }
  return structuredClone(option);
}

/** Required inputs left empty, or texts outside their length: Slack's client says so and sends nothing. */
function missingRequired(view: JsonObject): Record<string, string> {
  const values = (view.state as { values: Record<string, Record<string, JsonObject>> }).values;
  const missing: Record<string, string> = {};
  for (const block of (view.blocks as JsonObject[]) ?? []) {
    if (block.type !== 'input' || !isObject(block.element)) continue;
    const state = values[String(block.block_id)]?.[String(block.element.action_id)];
    const text = typeof state?.value === 'string' ? state.value : '';
    const empty =
      state === undefined ||
      (state.type === 'plain_text_input' && text === '') ||
      (Array.isArray(state.selected_options) && state.selected_options.length === 0) ||
      ('selected_option' in state && state.selected_option === null);
    if (empty && block.optional !== true) missing[String(block.block_id)] = 'Please complete this required field.';
    const { min_length: min, max_length: max } = block.element;
    if (text !== '' && ((typeof min === 'number' && text.length < min) || (typeof max === 'number' && text.length > max))) {
      missing[String(block.block_id)] = 'Please enter a text of the required length.';
    }
  }
  return missing;
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
