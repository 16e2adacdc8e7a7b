import { type ApiDeps, fail, flagArg, type MethodSpec, stringArg } from './api-context.ts';
import { BOT_ID, BOT_USER_ID, botAuthor } from './config.ts';
import { MAX_TEXT, parseContent, parseMetadata } from './message-content.ts';
import { wireMessage } from './payloads.ts';
import type { JsonObject } from './types.ts';

function postMessage(args: JsonObject, deps: ApiDeps): JsonObject {
  const channel = deps.directory.resolveChannel(stringArg(args, 'channel') ?? '');
  if (channel === undefined) return fail('channel_not_found');
  const parsed = parseContent(args);
  if (!parsed.ok) return parsed.reply;
  const meta = parseMetadata(args.metadata);
  if (!meta.ok) return meta.reply;
  const threadTs = stringArg(args, 'thread_ts') || undefined;
  const message = deps.messages.post(channel, {
    ...parsed.content,
    text: parsed.content.text.slice(0, MAX_TEXT),
    ...botAuthor(deps.config),
    thread_ts: threadTs,
    broadcast: flagArg(args, 'reply_broadcast'),
    metadata: meta.metadata,
  });
  return { ok: true, channel, ts: message.ts, message: wireMessage(message) };
}

function update(args: JsonObject, deps: ApiDeps): JsonObject {
  const channel = deps.directory.resolveChannel(stringArg(args, 'channel') ?? '');
  if (channel === undefined) return fail('channel_not_found');
  const ts = stringArg(args, 'ts') ?? '';
  const existing = deps.messages.get(channel, ts);
  if (existing === undefined) return fail('message_not_found');
  if (existing.bot_id !== BOT_ID) return fail('cant_update_message');
  const parsed = parseContent(args);
  if (!parsed.ok) return parsed.reply;
  if (parsed.content.text.length > MAX_TEXT) return fail('msg_too_long');
  const meta = parseMetadata(args.metadata);
  if (!meta.ok) return meta.reply;
  const change = { ...parsed.content, editor: BOT_USER_ID, source: 'chat.update' as const };
  const message = deps.messages.update(channel, ts, meta.metadata === undefined ? change : { ...change, metadata: meta.metadata });
  if (message === undefined) return fail('message_not_found');
  return { ok: true, channel, ts, text: message.text, message: wireMessage(message) };
}

function postEphemeral(args: JsonObject, deps: ApiDeps): JsonObject {
  const channel = deps.directory.resolveChannel(stringArg(args, 'channel') ?? '');
  if (channel === undefined) return fail('channel_not_found');
  const user = stringArg(args, 'user') ?? '';
  if (deps.directory.user(user) === undefined) return fail('user_not_found');
  const parsed = parseContent(args);
  if (!parsed.ok) return parsed.reply;
  if (parsed.content.text.length > MAX_TEXT) return fail('msg_too_long');
  const threadTs = stringArg(args, 'thread_ts') || undefined;
  const ephemeral = deps.messages.addEphemeral({
    channel,
    user,
    text: parsed.content.text,
    ...(parsed.content.blocks === undefined ? {} : { blocks: parsed.content.blocks }),
    ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
    source: 'chat.postEphemeral',
  });
  return { ok: true, message_ts: ephemeral.message_ts };
}

function deleteMessage(args: JsonObject, deps: ApiDeps): JsonObject {
  const channel = deps.directory.resolveChannel(stringArg(args, 'channel') ?? '');
  if (channel === undefined) return fail('channel_not_found');
  const ts = stringArg(args, 'ts') ?? '';
  const existing = deps.messages.get(channel, ts);
  if (existing === undefined) return fail('message_not_found');
  if (existing.bot_id !== BOT_ID) return fail('cant_delete_message');
  deps.messages.delete(channel, ts);
  return { ok: true, channel, ts };
}

function getPermalink(args: JsonObject, deps: ApiDeps): JsonObject {
  const channel = deps.directory.resolveChannel(stringArg(args, 'channel') ?? '');
  if (channel === undefined) return fail('channel_not_found');
  const ts = stringArg(args, 'message_ts') ?? '';
  const message = deps.messages.get(channel, ts);
  if (message === undefined) return fail('message_not_found');
  // Slack's form: the channel, then p and the ts without its dot; a reply adds its thread.
  const base = `https://${deps.config.teamDomain}.slack.com/archives/${channel}/p${ts.replace('.', '')}`;
  return {
    ok: true,
    channel,
    permalink: message.thread_ts !== undefined && message.thread_ts !== ts ? `${base}?thread_ts=${message.thread_ts}&cid=${channel}` : base,
  };
}

export const chatMethods: Record<string, MethodSpec> = {
  'chat.postMessage': { token: 'bot', handle: postMessage },
  'chat.update': { token: 'bot', handle: update },
  'chat.postEphemeral': { token: 'bot', handle: postEphemeral },
  'chat.delete': { token: 'bot', handle: deleteMessage },
  'chat.getPermalink': { token: 'bot', handle: getPermalink },
};
