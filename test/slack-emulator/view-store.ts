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
