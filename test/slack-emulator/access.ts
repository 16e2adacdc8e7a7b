import { fail, stringArg } from './api-context.ts';
import type { ChannelKind, Directory } from './directory.ts';
import type { JsonObject } from './types.ts';

/** The `*:history` scope Slack's reference names for reading each kind of conversation. */
const HISTORY_SCOPE: Record<ChannelKind, string> = { public: 'channels:history', private: 'groups:history', im: 'im:history' };
/** The `*:read` scope for a conversation's basic facts and members. */
const READ_SCOPE: Record<ChannelKind, string> = { public: 'channels:read', private: 'groups:read', im: 'im:read' };

/**
 * What a bot token needs for each method (Slack's method reference, "Required scopes" for bot
 * tokens): a scope, none (`null`), or one that depends on the kind of conversation.
 */
export const BOT_SCOPES: Record<string, string | null | ((kind: ChannelKind) => string)> = {
  'auth.test': null,
  'chat.postMessage': 'chat:write',
  'chat.update': 'chat:write',
  'chat.postEphemeral': 'chat:write',
  'chat.delete': 'chat:write',
  'chat.getPermalink': null,
  'conversations.history': (kind) => HISTORY_SCOPE[kind],
  'conversations.replies': (kind) => HISTORY_SCOPE[kind],
  'conversations.members': (kind) => READ_SCOPE[kind],
  'users.info': 'users:read',
  'usergroups.users.list': 'usergroups:read',
  // The scope of each kind of channel listed (`types`); a private channel comes only to a member.
  'conversations.list': (kind) => READ_SCOPE[kind],
  'users.list': 'users:read',
  'usergroups.list': 'usergroups:read',
  'files.getUploadURLExternal': 'files:write',
  'files.completeUploadExternal': 'files:write',
  'views.publish': null,
  'views.open': null,
  'views.update': null,
};

/** The argument naming the conversation a method acts in. */
const CHANNEL_ARG: Record<string, string> = {
  'chat.postMessage': 'channel',
  'chat.update': 'channel',
  'chat.postEphemeral': 'channel',
  'chat.delete': 'channel',
  'chat.getPermalink': 'channel',
  'conversations.history': 'channel',
  'conversations.replies': 'channel',
  'conversations.members': 'channel',
  'files.completeUploadExternal': 'channel_id',
};

/** Methods a bot may call in a public channel it is not in (the others answer `not_in_channel`). */
const OUTSIDE_MEMBERSHIP = new Set(['chat.getPermalink']);

export interface AccessDeps {
  directory: Directory;
  scopes: ReadonlySet<string>;
}

/**
 * Whether the bot token may make this call, answered as Slack does before the method runs:
 * `missing_scope` (with `needed` and `provided`), `channel_not_found` for a private channel the
 * bot is not in (Slack does not reveal it exists), `not_in_channel` for a public one. Undefined
 * when the call may go ahead; an unknown channel is left to the method, which reports it.
 */
export function refuseBotCall(method: string, args: JsonObject, deps: AccessDeps): JsonObject | undefined {
  const rule = BOT_SCOPES[method];
  if (typeof rule === 'string' && !deps.scopes.has(rule)) return missingScope(rule, deps.scopes);
  if (method === 'conversations.list' && typeof rule === 'function') {
    const kinds: ChannelKind[] = (stringArg(args, 'types') ?? 'public_channel').split(',').flatMap((t): ChannelKind[] => {
      const type = t.trim();
      return type === 'public_channel' ? ['public'] : type === 'private_channel' ? ['private'] : [];
    });
    const needed = kinds.map(rule).find((scope) => !deps.scopes.has(scope));
    return needed === undefined ? undefined : missingScope(needed, deps.scopes);
  }
  const argName = CHANNEL_ARG[method];
  const ref = argName === undefined ? undefined : stringArg(args, argName);
  const channel = ref === undefined || ref === '' ? undefined : deps.directory.channelAccess(ref);
  if (channel === undefined) return undefined;
  if (channel.kind === 'private' && !channel.botMember) return fail('channel_not_found');
  if (typeof rule === 'function') {
    const needed = rule(channel.kind);
    if (!deps.scopes.has(needed)) return missingScope(needed, deps.scopes);
  }
  if (channel.botMember || OUTSIDE_MEMBERSHIP.has(method)) return undefined;
  // chat:write.public lets a bot post in public channels it was never invited to.
  if (method === 'chat.postMessage' && deps.scopes.has('chat:write.public')) return undefined;
  return fail('not_in_channel');
}

/** The scope the method accepts for this call, for Slack's `x-accepted-oauth-scopes` header. */
export function acceptedScope(method: string, args: JsonObject, directory: Directory): string | undefined {
  const rule = BOT_SCOPES[method];
  if (typeof rule === 'string') return rule;
  if (typeof rule !== 'function') return undefined;
  const ref = stringArg(args, CHANNEL_ARG[method] ?? 'channel');
  const channel = ref === undefined ? undefined : directory.channelAccess(ref);
  return channel === undefined ? undefined : rule(channel.kind);
}

function missingScope(needed: string, granted: ReadonlySet<string>): JsonObject {
  return fail('missing_scope', { needed, provided: [...granted].join(',') });
}
