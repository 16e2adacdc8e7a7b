import { type ApiDeps, fail, type MethodSpec, numberArg, stringArg } from './api-context.ts';
import { botAuthor } from './config.ts';
import { isObject } from './payloads.ts';
import type { JsonObject, MessageFile } from './types.ts';

function getUploadUrl(args: JsonObject, deps: ApiDeps): JsonObject {
  const filename = stringArg(args, 'filename');
  const length = numberArg(args, 'length');
  if (filename === undefined || filename === '' || length === undefined) return fail('invalid_arguments');
  const fileId = deps.files.reserve(filename, length);
  return { ok: true, upload_url: `${deps.origin()}/upload/${fileId}`, file_id: fileId };
}

/**
 * Completes uploads and, when a channel is given, shares them there as one message
 * (in the thread when `thread_ts` is given), as Slack does.
 */
function completeUpload(args: JsonObject, deps: ApiDeps): JsonObject {
  const requested = Array.isArray(args.files) ? args.files.filter(isObject) : [];
  if (requested.length === 0) return fail('invalid_arguments');
  const channelArg = stringArg(args, 'channel_id');
  const channel = channelArg === undefined ? undefined : deps.directory.resolveChannel(channelArg);
  if (channelArg !== undefined && channel === undefined) return fail('channel_not_found');
  const ids = requested.map((f) => (typeof f.id === 'string' ? f.id : ''));
  if (!ids.every((id) => deps.files.isReady(id))) return fail('file_not_found');

  const threadTs = stringArg(args, 'thread_ts') || undefined;
  const initialComment = stringArg(args, 'initial_comment');
  const shared: MessageFile[] = [];
  for (const [i, id] of ids.entries()) {
    const title = stringArg(requested[i] ?? {}, 'title');
    const file = deps.files.complete({
      id,
      title: title ?? '',
      ...(channel === undefined ? {} : { channel }),
      ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      ...(initialComment === undefined ? {} : { initial_comment: initialComment }),
    });
    if (file === undefined) return fail('file_not_found');
    shared.push({ id: file.id, name: file.filename, title: file.title });
  }
  if (channel !== undefined) {
    deps.messages.post(channel, { text: initialComment ?? '', ...botAuthor(deps.config), thread_ts: threadTs, files: shared });
  }
  return { ok: true, files: shared.map((f) => ({ id: f.id, title: f.title, name: f.name })) };
}

export const fileMethods: Record<string, MethodSpec> = {
  'files.getUploadURLExternal': { token: 'bot', handle: getUploadUrl },
  'files.completeUploadExternal': { token: 'bot', handle: completeUpload },
};
