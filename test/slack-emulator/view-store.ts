import { randomBytes } from 'node:crypto';
import type { JsonObject } from './types.ts';

/** One `views.publish` Slack accepted. */
export interface PublishedView {
  user: string;
  /** The view as Slack answered it: the published fields plus id, hash and the app's ids. */
  view: JsonObject;
  at: number;
}

/** The Home tab of each user, as the bot last published it. */
export class ViewStore {
  readonly #homes = new Map<string, JsonObject>();
  readonly #published: PublishedView[] = [];

  /** Stores `view` as the user's Home and returns it as Slack does: with its id (kept across publishes) and a new hash. */
  publishHome(user: string, view: JsonObject, ids: { teamId: string; appId: string; botId: string }): JsonObject {
    const id =
      typeof this.#homes.get(user)?.id === 'string'
        ? String(this.#homes.get(user)!.id)
        : `V${randomBytes(5).toString('hex').toUpperCase()}`;
    const stored: JsonObject = {
      id,
      team_id: ids.teamId,
      type: 'home',
      blocks: view.blocks ?? [],
      private_metadata: typeof view.private_metadata === 'string' ? view.private_metadata : '',
      callback_id: typeof view.callback_id === 'string' ? view.callback_id : '',
      state: { values: {} },
      hash: `${Math.floor(Date.now() / 1000)}.${randomBytes(4).toString('hex')}`,
      clear_on_close: false,
      notify_on_close: false,
      close: null,
      submit: null,
      root_view_id: id,
      previous_view_id: null,
      app_id: ids.appId,
      external_id: typeof view.external_id === 'string' ? view.external_id : '',
      app_installed_team_id: ids.teamId,
      bot_id: ids.botId,
    };
    this.#homes.set(user, stored);
    this.#published.push({ user, view: structuredClone(stored), at: Date.now() });
    return structuredClone(stored);
  }

  /** The user's Home as last published, if ever. */
  home(user: string): JsonObject | undefined {
    const view = this.#homes.get(user);
    return view === undefined ? undefined : structuredClone(view);
  }

  /** Every accepted publish, oldest first; only those for `user` when given. */
  published(user?: string): PublishedView[] {
    return this.#published.filter((p) => user === undefined || p.user === user).map((p) => structuredClone(p));
  }
}

/**
 * The `app_home_opened` event Slack sends when `user` opens the app's Home tab: with the app's
 * DM channel with them and, once a Home was published for them, that view.
 */
export function homeOpenedEvent(user: string, botEvents: readonly string[], views: ViewStore): JsonObject {
  if (!botEvents.includes('app_home_opened')) {
    throw new Error(
      'the app manifest does not subscribe to app_home_opened (settings.event_subscriptions.bot_events), so Slack would not send it',
    );
  }
  const view = views.home(user);
  return { type: 'app_home_opened', user, channel: `D${user.slice(1)}`, tab: 'home', ...(view === undefined ? {} : { view }) };
}

/** How a modal left the screen. */
export type ModalEnd = 'submitted' | 'closed' | 'cleared';

/** One modal the bot opened with `views.open`, as the user saw it. */
export interface OpenedModal {
  viewId: string;
  user: string;
  /** The view now, with the state the user's inputs give it. */
  view: JsonObject;
  /** Each view the modal showed, oldest first: the opened one, then each `views.update` or `response_action: update`. */
  versions: JsonObject[];
  /** `response_action: errors` answers to submissions, oldest first. */
  errors: Record<string, string>[];
  open: boolean;
  ended?: ModalEnd;
  openedAt: number;
}

export interface ViewIds {
  teamId: string;
  appId: string;
  botId: string;
}

interface Trigger {
  user: string;
  issuedAt: number;
  exchanged: boolean;
}

/** Element types whose value is part of a view's state. */
const STATEFUL = new Set(['plain_text_input', 'static_select', 'multi_static_select', 'checkboxes', 'radio_buttons']);

/**
 * Trigger ids Slack issued with interactions: each opens one modal, for the user who acted,
 * within a few seconds of the interaction.
 */
export class TriggerStore {
  readonly #triggers = new Map<string, Trigger>();

  issue(triggerId: string, user: string): void {
    this.#triggers.set(triggerId, { user, issuedAt: Date.now(), exchanged: false });
  }

  /** Whether a modal was opened with this trigger. */
  exchanged(triggerId: string): boolean {
    return this.#triggers.get(triggerId)?.exchanged === true;
  }

  /** Spends the trigger, or says why Slack would refuse it. */
  exchange(triggerId: string, ttlMs: number): { ok: true; user: string } | { ok: false; error: string } {
    const trigger = this.#triggers.get(triggerId);
    if (trigger === undefined) return { ok: false, error: 'invalid_trigger_id' };
    if (trigger.exchanged) return { ok: false, error: 'exchanged_trigger_id' };
    if (Date.now() - trigger.issuedAt > ttlMs) return { ok: false, error: 'expired_trigger_id' };
    trigger.exchanged = true;
    return { ok: true, user: trigger.user };
  }
}

/** Modals opened with `views.open`, kept after they close so tests and transcripts can show them. */
export class ModalStore {
  readonly #modals = new Map<string, OpenedModal>();

  open(user: string, view: JsonObject, ids: ViewIds): JsonObject {
    const id = `V${randomBytes(5).toString('hex').toUpperCase()}`;
    const stored = modalView(id, view, ids, {});
    this.#modals.set(id, {
      viewId: id,
      user,
      view: stored,
      versions: [structuredClone(stored)],
      errors: [],
      open: true,
      openedAt: Date.now(),
    });
    return structuredClone(stored);
  }

  /** Replaces an open modal's view; what the user entered stays where block and action ids are unchanged, as in Slack. */
  update(viewId: string, view: JsonObject, ids: ViewIds): JsonObject | undefined {
    const modal = this.#modals.get(viewId);
    if (modal === undefined || !modal.open) return undefined;
    const kept = (modal.view.state as { values: Record<string, Record<string, JsonObject>> }).values;
    const stored = modalView(viewId, view, ids, kept);
    modal.view = stored;
    modal.versions.push(structuredClone(stored));
    return structuredClone(stored);
  }

  /** The open modal with this id or external id. */
  find(viewId: string | undefined, externalId: string | undefined): OpenedModal | undefined {
    for (const modal of this.#modals.values()) {
      if (!modal.open) continue;
      if (viewId !== undefined && viewId !== '' && modal.viewId === viewId) return modal;
      if (externalId !== undefined && externalId !== '' && modal.view.external_id === externalId) return modal;
    }
    return undefined;
  }

  /** The live record (not a copy), for the user side. */
  get(viewId: string): OpenedModal | undefined {
    return this.#modals.get(viewId);
  }

  end(viewId: string, how: ModalEnd): void {
    const modal = this.#modals.get(viewId);
    if (modal === undefined) return;
    modal.open = false;
    modal.ended = how;
  }

  /** Every modal opened, oldest first; only `user`'s when given. */
  list(user?: string): OpenedModal[] {
    return [...this.#modals.values()].filter((m) => user === undefined || m.user === user).map((m) => structuredClone(m));
  }
}

/** A modal view as Slack answers it, its blocks and inputs given ids, its state from the initial values and `kept`. */
function modalView(id: string, view: JsonObject, ids: ViewIds, kept: Record<string, Record<string, JsonObject>>): JsonObject {
  const blocks = (Array.isArray(view.blocks) ? view.blocks : []).map((b) => withIds(b as JsonObject));
  const values: Record<string, Record<string, JsonObject>> = {};
  for (const block of blocks) {
    for (const element of statefulElements(block)) {
      const blockId = String(block.block_id);
      const actionId = String(element.action_id);
      const previous = kept[blockId]?.[actionId];
      const state = previous !== undefined && previous.type === element.type ? previous : initialState(element);
      (values[blockId] ??= {})[actionId] = structuredClone(state);
    }
  }
  return {
    id,
    team_id: ids.teamId,
    type: 'modal',
    blocks,
    private_metadata: typeof view.private_metadata === 'string' ? view.private_metadata : '',
    callback_id: typeof view.callback_id === 'string' ? view.callback_id : '',
    state: { values },
    hash: `${Math.floor(Date.now() / 1000)}.${randomBytes(4).toString('hex')}`,
    title: view.title,
    clear_on_close: view.clear_on_close === true,
    notify_on_close: view.notify_on_close === true,
    close: view.close ?? null,
    submit: view.submit ?? null,
    previous_view_id: null,
    root_view_id: id,
    app_id: ids.appId,
    external_id: typeof view.external_id === 'string' ? view.external_id : '',
    app_installed_team_id: ids.teamId,
    bot_id: ids.botId,
  };
}

/** Slack gives every block and interactive element an id when the app gave none. */
function withIds(block: JsonObject): JsonObject {
  const copy = structuredClone(block);
  copy.block_id ??= randomBytes(3).toString('base64url');
  const elements = [...(Array.isArray(copy.elements) ? copy.elements : []), copy.accessory, copy.element];
  for (const element of elements) {
    if (
      typeof element === 'object' &&
      element !== null &&
      'type' in element &&
      element.type !== 'mrkdwn' &&
      element.type !== 'plain_text'
    ) {
      const e = element as JsonObject;
      if (e.type !== 'image') e.action_id ??= randomBytes(3).toString('base64url');
    }
  }
  return copy;
}

/** The elements of a block whose value is in the view's state. */
export function statefulElements(block: JsonObject): JsonObject[] {
  const elements = [...(Array.isArray(block.elements) ? block.elements : []), block.accessory, block.element];
  return elements.filter((e): e is JsonObject => typeof e === 'object' && e !== null && STATEFUL.has(String((e as JsonObject).type)));
}

function initialState(element: JsonObject): JsonObject {
  switch (element.type) {
    case 'plain_text_input':
      return { type: element.type, value: typeof element.initial_value === 'string' ? element.initial_value : null };
    case 'checkboxes':
    case 'multi_static_select':
      return { type: element.type, selected_options: Array.isArray(element.initial_options) ? element.initial_options : [] };
    default:
      return { type: element.type, selected_option: element.initial_option ?? null };
  }
}
