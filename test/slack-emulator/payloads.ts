import { randomBytes, randomInt } from 'node:crypto';
import type { EmulatorConfig } from './config.ts';
import type { Directory } from './directory.ts';
import type { JsonObject, Message } from './types.ts';

export interface SlashCommandInput {
  user: string;
  channel: string;
  text: string;
  /** Default `/talos`. */
  command?: string;
}

export interface ButtonClickInput {
  user: string;
  channel: string;
  messageTs: string;
  actionId: string;
  /** Overrides the button's value, e.g. to simulate a tampered payload. */
  value?: string;
  /** Selects the block holding the button; also overrides the sent `block_id` (stale buttons). */
  blockId?: string;
  /**
   * The message's checkboxes the user ticked before clicking, by action_id: the values of the options
   * ticked. Only options the message offers can be ticked, as in the client.
   */
  ticks?: Record<string, string[]>;
}

export interface PayloadContext {
  config: EmulatorConfig;
  directory: Directory;
}

/** A message as Slack embeds it in payloads and history replies (no `channel` field). */
export function wireMessage(message: Message, includeMetadata = true): JsonObject {
  const wire: JsonObject = { ...structuredClone(message) };
  delete wire.channel;
  if (!includeMetadata) delete wire.metadata;
  return wire;
}

export function newTriggerId(): string {
  return `${randomInt(1_000_000_000, 9_999_999_999)}.${randomInt(1_000_000_000, 9_999_999_999)}.${randomBytes(16).toString('hex')}`;
}

/** Fields of section 1.5: what `app.command()` sees as `body`/`command`. */
export function slashCommandPayload(ctx: PayloadContext, input: SlashCommandInput, responseUrl: string): Record<string, string> {
  const { config, directory } = ctx;
  return {
    token: config.verificationToken,
    team_id: config.teamId,
    team_domain: config.teamDomain,
    channel_id: input.channel,
    channel_name: directory.channelName(input.channel),
    user_id: input.user,
    user_name: directory.userName(input.user),
    command: input.command ?? '/talos',
    text: input.text,
    api_app_id: config.appId,
    is_enterprise_install: 'false',
    response_url: responseUrl,
    trigger_id: newTriggerId(),
  };
}

export interface FoundButton {
  blockId: string | undefined;
  element: JsonObject;
}

/** Finds an interactive element by action_id in actions blocks and section accessories. */
export function findButton(blocks: JsonObject[] | undefined, actionId: string, blockId?: string): FoundButton | undefined {
  for (const block of blocks ?? []) {
    const id = typeof block.block_id === 'string' ? block.block_id : undefined;
    if (blockId !== undefined && id !== blockId) continue;
    const candidates = [...(Array.isArray(block.elements) ? block.elements : []), block.accessory];
    for (const element of candidates) {
      if (isObject(element) && element.action_id === actionId) return { blockId: id, element };
    }
  }
  return undefined;
}

/**
 * A `block_actions` payload as sent for a button click (section 1.5). When the message is
 * unknown the payload is still built from the given fields, as a click on a stale client would be.
 */
export function blockActionsPayload(
  ctx: PayloadContext,
  input: ButtonClickInput,
  message: Message | undefined,
  responseUrl: string,
  actionTs: string,
): JsonObject {
  const { config, directory } = ctx;
  const found = findButton(message?.blocks, input.actionId, input.blockId);
  const element = found?.element ?? {};
  const action: JsonObject = {
    type: typeof element.type === 'string' ? element.type : 'button',
    action_id: input.actionId,
    block_id: input.blockId ?? found?.blockId ?? randomBytes(3).toString('hex'),
    text: isObject(element.text) ? element.text : { type: 'plain_text', text: input.actionId, emoji: true },
    action_ts: actionTs,
  };
  const value = input.value ?? (typeof element.value === 'string' ? element.value : undefined);
  if (value !== undefined) action.value = value;
  if (typeof element.style === 'string') action.style = element.style;

  const threadTs = message !== undefined && message.thread_ts !== message.ts ? message.thread_ts : undefined;
  const container: JsonObject = {
    type: 'message',
    message_ts: input.messageTs,
    channel_id: input.channel,
    is_ephemeral: false,
  };
  if (threadTs !== undefined) container.thread_ts = threadTs;

  return {
    type: 'block_actions',
    user: { id: input.user, username: directory.userName(input.user), name: directory.userName(input.user), team_id: config.teamId },
    api_app_id: config.appId,
    token: config.verificationToken,
    container,
    trigger_id: newTriggerId(),
    team: { id: config.teamId, domain: config.teamDomain },
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: input.channel, name: directory.channelName(input.channel) },
    message: message === undefined ? { type: 'message', ts: input.messageTs, text: '' } : wireMessage(message),
    state: { values: messageState(message?.blocks, input.ticks ?? {}) },
    response_url: responseUrl,
    actions: [action],
  };
}

/**
 * The `state.values` a click carries: every checkboxes input of the message by block_id and action_id,
 * with the options the user ticked (none by default), as the client keeps them for the message.
 */
function messageState(blocks: JsonObject[] | undefined, ticks: Record<string, string[]>): JsonObject {
  const values: Record<string, JsonObject> = {};
  const seen = new Set<string>();
  for (const block of blocks ?? []) {
    const elements = [...(Array.isArray(block.elements) ? block.elements : []), block.accessory];
    for (const element of elements) {
      if (!isObject(element) || element.type !== 'checkboxes' || typeof block.block_id !== 'string') continue;
      const actionId = String(element.action_id);
      const options = Array.isArray(element.options) ? (element.options as JsonObject[]) : [];
      const chosen = (ticks[actionId] ?? []).map((value) => {
        const option = options.find((o) => o.value === value);
        if (option === undefined)
          throw new Error(
            `the ${actionId} checkboxes offer no option ${value} (offered: ${options.map((o) => String(o.value)).join(', ')})`,
          );
        return structuredClone(option);
      });
      seen.add(actionId);
      (values[block.block_id] ??= {})[actionId] = { type: 'checkboxes', selected_options: chosen };
    }
  }
  const missing = Object.keys(ticks).filter((id) => !seen.has(id));
  if (missing.length > 0) throw new Error(`the message has no checkboxes ${missing.join(', ')} to tick`);
  return values;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What a user enters in a modal, by block_id: a text, the value of the option chosen, or the values of the options ticked. */
export type ViewInput = Record<string, string | string[] | null>;

export interface ViewSubmitOptions {
  /** Sent instead of the view's `private_metadata`, as a tampered or stale client would. */
  privateMetadata?: string;
  /** Sent instead of the view's `state.values`, as a forged payload would: nothing is checked, not even required inputs. */
  stateValues?: JsonObject;
}

export interface ViewClickInput {
  user: string;
  viewId: string;
  actionId: string;
  blockId?: string;
  /** A button's value override; for a select in an actions block, the value of the option chosen. */
  value?: string;
}

/** A click on a button of the user's published Home tab. */
export interface HomeClickInput {
  user: string;
  actionId: string;
  blockId?: string;
  /** The button's value override, as a forged payload would send. */
  value?: string;
}

/** The user and app fields every interactive payload carries. */
function interactiveCommon(ctx: PayloadContext, user: string): JsonObject {
  const { config, directory } = ctx;
  return {
    team: { id: config.teamId, domain: config.teamDomain },
    user: { id: user, username: directory.userName(user), name: directory.userName(user), team_id: config.teamId },
    api_app_id: config.appId,
    token: config.verificationToken,
    trigger_id: newTriggerId(),
    enterprise: null,
    is_enterprise_install: false,
  };
}

/** `view_submission` (section 1.5 of the reference note): the view with the user's state, no response_url. */
export function viewSubmissionPayload(ctx: PayloadContext, user: string, view: JsonObject): JsonObject {
  return { type: 'view_submission', ...interactiveCommon(ctx, user), view, response_urls: [] };
}

/** `view_closed`, sent only for views opened with `notify_on_close`. */
export function viewClosedPayload(ctx: PayloadContext, user: string, view: JsonObject): JsonObject {
  return { type: 'view_closed', ...interactiveCommon(ctx, user), view, is_cleared: false };
}

/** `block_actions` from an element inside a modal: the container is the view, and the view comes along. */
export function viewBlockActionsPayload(ctx: PayloadContext, user: string, view: JsonObject, action: JsonObject): JsonObject {
  return {
    type: 'block_actions',
    ...interactiveCommon(ctx, user),
    container: { type: 'view', view_id: view.id },
    view,
    actions: [action],
  };
}
