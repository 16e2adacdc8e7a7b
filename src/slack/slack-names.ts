import type { WebClient } from '@slack/web-api';
import type { NameLookup } from '../config/inventory-names.ts';

/** A page size Slack accepts for its list methods (it may return fewer). */
const PAGE = 200;

/** Every page of a cursor-paged list method, until Slack gives no `next_cursor`. */
async function allPages<T>(fetch: (cursor: string | undefined) => Promise<{ items: T[]; next?: string | undefined }>): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await fetch(cursor);
    all.push(...page.items);
    cursor = page.next === '' ? undefined : page.next;
  } while (cursor !== undefined);
  return all;
}

/**
 * The workspace's names for the inventory's `#channel` and `@handle` entries, read with the scopes
 * the app manifest grants: conversations.list (channels:read for public channels, groups:read for
 * the private ones the bot is in), users.list (users:read), usergroups.list (usergroups:read).
 */
export function createSlackNameLookup(client: WebClient): NameLookup {
  return {
    async channels() {
      const channels = await allPages(async (cursor) => {
        const answer = await client.conversations.list({
          types: 'public_channel,private_channel',
          exclude_archived: true,
          limit: PAGE,
          ...(cursor === undefined ? {} : { cursor }),
        });
        return { items: answer.channels ?? [], next: answer.response_metadata?.next_cursor };
      });
      return new Map(channels.flatMap((c) => (c.name !== undefined && c.id !== undefined ? [[c.name, c.id] as const] : [])));
    },
    async users() {
      const members = await allPages(async (cursor) => {
        const answer = await client.users.list({ limit: PAGE, ...(cursor === undefined ? {} : { cursor }) });
        return { items: answer.members ?? [], next: answer.response_metadata?.next_cursor };
      });
      const handles = new Map<string, string>();
      // The handle people type after @ is the display name where one is set, else the user name; a
      // user name wins over someone else's display name of the same spelling.
      for (const m of members) {
        const display = m.profile?.display_name;
        if (m.deleted !== true && m.id !== undefined && display !== undefined && display !== '') handles.set(display, m.id);
      }
      for (const m of members) if (m.deleted !== true && m.id !== undefined && m.name !== undefined) handles.set(m.name, m.id);
      return handles;
    },
    async usergroups() {
      const answer = await client.usergroups.list({});
      return new Map(
        (answer.usergroups ?? []).flatMap((g) => (g.handle !== undefined && g.id !== undefined ? [[g.handle, g.id] as const] : [])),
      );
    },
  };
}
