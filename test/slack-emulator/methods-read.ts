import { type ApiDeps, fail, flagArg, type MethodSpec, numberArg, stringArg } from './api-context.ts';
import { BOT_ID, BOT_USER_ID } from './config.ts';
import { compareTs } from './message-store.ts';
import { wireMessage } from './payloads.ts';
import type { JsonObject, Message } from './types.ts';

function authTest(_args: JsonObject, deps: ApiDeps): JsonObject {
  const { config } = deps;
  return {
    ok: true,
    url: `https://${config.teamDomain}.slack.com/`,
    team: config.teamDomain,
    user: config.botName,
    team_id: config.teamId,
    user_id: BOT_USER_ID,
    bot_id: BOT_ID,
    is_enterprise_install: false,
  };
}

function connectionsOpen(_args: JsonObject, deps: ApiDeps): JsonObject {
  return { ok: true, url: deps.openSocketUrl() };
}

function history(args: JsonObject, deps: ApiDeps): JsonObject {
  const channel = deps.directory.resolveChannel(stringArg(args, 'channel') ?? '');
  if (channel === undefined) return fail('channel_not_found');
  const inRange = timeWindow(args);
  const newestFirst = deps.messages.topLevel(channel).filter(inRange).reverse();
  return page(newestFirst, args, 100, flagArg(args, 'include_all_metadata'));
}

function replies(args: JsonObject, deps: ApiDeps): JsonObject {
  const channel = deps.directory.resolveChannel(stringArg(args, 'channel') ?? '');
  if (channel === undefined) return fail('channel_not_found');
  const target = deps.messages.get(channel, stringArg(args, 'ts') ?? '');
  if (target === undefined) return fail('thread_not_found');
  const rootTs = target.thread_ts ?? target.ts;
  const root = deps.messages.get(channel, rootTs);
  const thread = [...(root === undefined ? [] : [root]), ...deps.messages.replies(channel, rootTs)];
  return page(thread.filter(timeWindow(args)), args, 1000, flagArg(args, 'include_all_metadata'));
}

/** `conversations.members`: user ids, `limit` (default 100, held to 1..1000 as `page` does) per page, with a `next_cursor` while more remain. */
function members(args: JsonObject, deps: ApiDeps): JsonObject {
  const channel = deps.directory.resolveChannel(stringArg(args, 'channel') ?? '');
  if (channel === undefined) return fail('channel_not_found');
  const limit = Math.max(1, Math.min(numberArg(args, 'limit') ?? 100, 1000));
  const all = deps.directory.channelMembers(channel);
  const offset = decodeCursor(stringArg(args, 'cursor'));
  const hasMore = offset + limit < all.length;
  return {
    ok: true,
    members: all.slice(offset, offset + limit),
    response_metadata: { next_cursor: hasMore ? encodeCursor(offset + limit) : '' },
  };
}

function usersInfo(args: JsonObject, deps: ApiDeps): JsonObject {
  const id = stringArg(args, 'user') ?? '';
  const user = deps.directory.user(id);
  if (user === undefined) return fail('user_not_found');
  const isBot = id === BOT_USER_ID;
  const realName = user.realName ?? user.name;
  const displayName = user.displayName ?? '';
  return {
    ok: true,
    user: {
      id: user.id,
      team_id: deps.config.teamId,
      name: user.name,
      real_name: realName,
      deleted: false,
      is_bot: isBot,
      is_app_user: false,
      // A display name nobody set is the empty string, not absent (docs.slack.dev/reference/methods/users.info, "Profile").
      profile: {
        display_name: displayName,
        display_name_normalized: displayName,
        real_name: realName,
        real_name_normalized: realName,
        ...(isBot ? { bot_id: BOT_ID } : {}),
      },
    },
  };
}

function usergroupUsers(args: JsonObject, deps: ApiDeps): JsonObject {
  const members = deps.directory.usergroupMembers(stringArg(args, 'usergroup') ?? '');
  if (members === undefined) return fail('no_such_subteam');
  return { ok: true, users: [...members] };
}

/**
 * `conversations.list` (docs.slack.dev/reference/methods/conversations.list): the channels of the
 * `types` asked for (default `public_channel`), `limit` per page with a `next_cursor`. A private
 * channel is listed only to a member, as Slack does.
 */
function conversationsList(args: JsonObject, deps: ApiDeps): JsonObject {
  const types = (stringArg(args, 'types') ?? 'public_channel').split(',').map((t) => t.trim());
  const kinds = new Set(types.map((t) => (t === 'private_channel' ? 'private' : t === 'public_channel' ? 'public' : t)));
  const all = deps.directory
    .listableChannels()
    .filter((c) => kinds.has(c.kind))
    .map((c) => ({ id: c.id, name: c.name, is_channel: c.kind === 'public', is_private: c.kind === 'private', is_archived: false }));
  return { ok: true, channels: pageOf(all, args), response_metadata: { next_cursor: nextCursor(all, args) } };
}

/** `users.list`: every member of the workspace with its handle (`name`), paged like conversations.list. */
function usersList(args: JsonObject, deps: ApiDeps): JsonObject {
  const all = deps.directory.users().map((u) => ({
    id: u.id,
    team_id: deps.config.teamId,
    name: u.name,
    real_name: u.realName ?? u.name,
    deleted: false,
    is_bot: u.id === BOT_USER_ID,
    profile: { display_name: u.displayName ?? '', real_name: u.realName ?? u.name },
  }));
  return { ok: true, members: pageOf(all, args), response_metadata: { next_cursor: nextCursor(all, args) } };
}

/** `usergroups.list`: every user group with its `handle`; never paged (Slack's method has no cursor). */
function usergroupsList(_args: JsonObject, deps: ApiDeps): JsonObject {
  return {
    ok: true,
    usergroups: deps.directory
      .usergroups()
      .map((g) => ({ id: g.id, team_id: deps.config.teamId, handle: g.handle, name: g.handle, user_count: g.users.length })),
  };
}

function pageOf<T>(all: T[], args: JsonObject): T[] {
  const limit = Math.max(1, Math.min(numberArg(args, 'limit') ?? 100, 1000));
  const offset = decodeCursor(stringArg(args, 'cursor'));
  return all.slice(offset, offset + limit);
}

function nextCursor(all: unknown[], args: JsonObject): string {
  const limit = Math.max(1, Math.min(numberArg(args, 'limit') ?? 100, 1000));
  const offset = decodeCursor(stringArg(args, 'cursor'));
  return offset + limit < all.length ? encodeCursor(offset + limit) : '';
}

/** `oldest`/`latest` bounds, exclusive unless `inclusive` is set. */
function timeWindow(args: JsonObject): (m: Message) => boolean {
  const oldest = stringArg(args, 'oldest');
  const latest = stringArg(args, 'latest');
  const inclusive = flagArg(args, 'inclusive');
  return (m) => {
    if (oldest !== undefined) {
      const c = compareTs(m.ts, oldest);
      if (c < 0 || (c === 0 && !inclusive)) return false;
    }
    if (latest !== undefined) {
      const c = compareTs(m.ts, latest);
      if (c > 0 || (c === 0 && !inclusive)) return false;
    }
    return true;
  };
}

function page(all: Message[], args: JsonObject, defaultLimit: number, withMetadata: boolean): JsonObject {
  const limit = Math.max(1, Math.min(numberArg(args, 'limit') ?? defaultLimit, 1000));
  const offset = decodeCursor(stringArg(args, 'cursor'));
  const slice = all.slice(offset, offset + limit);
  const hasMore = offset + limit < all.length;
  return {
    ok: true,
    messages: slice.map((m) => wireMessage(m, withMetadata)),
    has_more: hasMore,
    response_metadata: { next_cursor: hasMore ? encodeCursor(offset + limit) : '' },
  };
}

function encodeCursor(offset: number): string {
  return Buffer.from(`next_offset:${offset}`).toString('base64');
}

function decodeCursor(cursor: string | undefined): number {
  if (cursor === undefined || cursor === '') return 0;
  const match = /^next_offset:(\d+)$/.exec(Buffer.from(cursor, 'base64').toString('utf8'));
  return match?.[1] === undefined ? 0 : Number(match[1]);
}

export const readMethods: Record<string, MethodSpec> = {
  'auth.test': { token: 'bot', handle: authTest },
  'apps.connections.open': { token: 'app', handle: connectionsOpen },
  'conversations.history': { token: 'bot', handle: history },
  'conversations.replies': { token: 'bot', handle: replies },
  'conversations.members': { token: 'bot', handle: members },
  'users.info': { token: 'bot', handle: usersInfo },
  'usergroups.users.list': { token: 'bot', handle: usergroupUsers },
  'conversations.list': { token: 'bot', handle: conversationsList },
  'users.list': { token: 'bot', handle: usersList },
  'usergroups.list': { token: 'bot', handle: usergroupsList },
};
