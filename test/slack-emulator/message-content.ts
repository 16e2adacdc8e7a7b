import { fail } from './api-context.ts';
import { validateBlocks } from './block-validation.ts';
import { isObject } from './payloads.ts';
import type { JsonObject, MessageMetadata } from './types.ts';

/** `chat.postMessage` silently truncates longer text; `chat.update` and ephemerals refuse it. */
export const MAX_TEXT = 40_000;

export interface Content {
  text: string;
  blocks?: JsonObject[];
  attachments?: JsonObject[];
}

export type ContentResult = { ok: true; content: Content } | { ok: false; reply: JsonObject };

/** Reads `text`, `blocks` and `attachments` as every message-writing endpoint does. */
export function parseContent(args: JsonObject): ContentResult {
  const content: Content = { text: typeof args.text === 'string' ? args.text : '' };
  if (args.blocks !== undefined) {
    const check = validateBlocks(args.blocks);
    if (!check.ok) {
      const messages = check.errors.map((e) => `[ERROR] ${e}`);
      return { ok: false, reply: fail(check.error, { errors: check.errors, response_metadata: { messages } }) };
    }
    content.blocks = check.blocks;
  }
  if (args.attachments !== undefined) {
    if (!Array.isArray(args.attachments) || !args.attachments.every(isObject)) {
      return { ok: false, reply: fail('invalid_attachments') };
    }
    content.attachments = args.attachments;
  }
  const empty = content.text === '' && (content.blocks ?? []).length === 0 && (content.attachments ?? []).length === 0;
  if (empty) return { ok: false, reply: fail('no_text') };
  return { ok: true, content };
}

export type MetadataResult = { ok: true; metadata: MessageMetadata | undefined } | { ok: false; reply: JsonObject };

export function parseMetadata(value: unknown): MetadataResult {
  if (value === undefined || value === '') return { ok: true, metadata: undefined };
  if (!isObject(value) || typeof value.event_type !== 'string' || !isObject(value.event_payload)) {
    return { ok: false, reply: fail('invalid_metadata_format') };
  }
  return { ok: true, metadata: { event_type: value.event_type, event_payload: value.event_payload } };
}
