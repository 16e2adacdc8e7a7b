import type { IncomingMessage } from 'node:http';
import type { JsonObject } from './types.ts';

/** Arguments that WebClient sends JSON-encoded inside form fields. */
const JSON_FIELDS = new Set(['blocks', 'attachments', 'metadata', 'files', 'user_auth_blocks']);

export async function readRawBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks);
}

/**
 * Decodes a Web API request body (urlencoded, JSON or multipart) into method arguments.
 * JSON-in-a-form-field values are decoded; a value that is not valid JSON stays a string
 * so the method can answer `invalid_blocks_format` as Slack does.
 */
export async function parseApiArgs(raw: Buffer, contentType: string | undefined, query: URLSearchParams): Promise<JsonObject> {
  const args: JsonObject = Object.fromEntries(query);
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (raw.length === 0) return args;
  if (type === 'application/json') {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) Object.assign(args, parsed);
    return args;
  }
  if (type === 'multipart/form-data') {
    const form = await parseMultipart(raw, contentType ?? '');
    for (const [key, value] of form) args[key] = typeof value === 'string' ? value : await value.text();
    return decodeJsonFields(args);
  }
  Object.assign(args, Object.fromEntries(new URLSearchParams(raw.toString('utf8'))));
  return decodeJsonFields(args);
}

export async function parseMultipart(raw: Buffer, contentType: string): Promise<FormData> {
  const request = new Request('http://emulator.invalid/', {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: new Uint8Array(raw),
  });
  return request.formData();
}

function decodeJsonFields(args: JsonObject): JsonObject {
  for (const key of JSON_FIELDS) {
    const value = args[key];
    if (typeof value !== 'string') continue;
    try {
      args[key] = JSON.parse(value);
    } catch {
      // Left as the raw string on purpose: the method reports the malformed field.
    }
  }
  return args;
}
