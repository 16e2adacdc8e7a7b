import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebClient } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { BOT_SCOPES } from '../slack-emulator/access.ts';

// The app works in a real workspace only with the scopes its manifest asks for. This test reads
// which Web API methods the bot's code calls and checks the manifest against Slack's method
// reference (docs.slack.dev/reference/methods/<method>, "Required scopes", bot token).

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every Web API method the bot may call, with the bot scopes Slack requires for it. */
const REQUIRED: Record<string, { scopes: string[]; why: string }> = {
  'auth.test': { scopes: [], why: 'Bolt verifies the bot token at start' },
  'apps.connections.open': { scopes: [], why: 'Socket Mode; the app-level token carries connections:write, no bot scope' },
  'chat.postMessage': { scopes: ['chat:write'], why: 'status messages and the audit thread' },
  'chat.update': { scopes: ['chat:write'], why: 'the edited status message, decided approvals' },
  'chat.postEphemeral': { scopes: ['chat:write'], why: 'replies only the clicking user sees' },
  'chat.delete': { scopes: ['chat:write'], why: 'a duplicate post removed' },
  'chat.getPermalink': { scopes: [], why: 'links to an operation thread' },
  // One scope per kind of channel: maintenance channels may be public or private.
  'conversations.replies': { scopes: ['channels:history', 'groups:history'], why: 'reading back its own thread replies' },
  'conversations.history': { scopes: ['channels:history', 'groups:history'], why: 'finding its own posts again' },
  'conversations.members': { scopes: ['channels:read', 'groups:read'], why: "the Home tab's detail for a cluster's channel members" },
  'files.getUploadURLExternal': { scopes: ['files:write'], why: 'first step of filesUploadV2' },
  'files.completeUploadExternal': { scopes: ['files:write'], why: 'last step of filesUploadV2' },
  // The Slack adapter names the POST of the bytes to the upload URL so; should the deprecated method of that name ever be called, it needs files:write too.
  'files.upload': { scopes: ['files:write'], why: 'the bytes of an external upload' },
  'usergroups.users.list': { scopes: ['usergroups:read'], why: 'operators and approvers named as user groups' },
  // The inventory's #channel and @handle names, resolved to ids at start and on a reload.
  'conversations.list': { scopes: ['channels:read', 'groups:read'], why: "the inventory's #channel names, public and private" },
  'users.list': { scopes: ['users:read'], why: "the inventory's @handle names of people" },
  'usergroups.list': { scopes: ['usergroups:read'], why: "the inventory's @handle names of user groups" },
  'users.info': { scopes: ['users:read'], why: "people's display names in the exported maintenance records" },
  'views.publish': { scopes: [], why: 'the Home tab' },
  'views.open': { scopes: [], why: 'the modal of a command typed without its version or node' },
  'views.update': { scopes: [], why: "the modal's releases, once Image Factory answered" },
};

/** Calls Bolt makes itself, which no line of the bot's code names. */
const IMPLICIT = ['auth.test', 'apps.connections.open'];

/** What the SDK's upload wrapper (`filesUploadV2`, also reachable as `files.uploadV2`) calls underneath. */
const UPLOAD_V2 = ['files.getUploadURLExternal', 'files.completeUploadExternal'];
const WRAPPERS: Record<string, string[]> = { filesUploadV2: UPLOAD_V2, 'files.uploadV2': UPLOAD_V2 };

/** The Web API methods behind a name in the code. */
function expand(name: string): string[] {
  return WRAPPERS[name] ?? [name];
}

interface Call {
  method: string;
  where: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

const client = new WebClient();

/** Whether `method` (`chat.postMessage`) is a method of Slack's Web API client. */
function isWebApiMethod(method: string): boolean {
  let value: unknown = client;
  for (const part of method.split('.')) value = (value as Record<string, unknown> | undefined)?.[part];
  return typeof value === 'function';
}

/**
 * The Web API methods named in one file: calls on a Web API client (`client.chat.postMessage(`,
 * `app.client.views.publish(`, `sender.chat.postMessage(`), the SDK's wrappers (`filesUploadV2`),
 * `apiCall('…')`, and the method names the Slack adapters pass to their `call('…', …)` helper.
 */
function methodsCalledIn(text: string, where: string): Call[] {
  const calls: Call[] = [];
  const add = (name: string, index: number): void => {
    const line = `${where}:${text.slice(0, index).split('\n').length}`;
    for (const method of expand(name)) calls.push({ method, where: line });
  };
  for (const m of text.matchAll(/\b(\w*[cC]lient|sender)\s*\.\s*([a-z]+(?:\.[a-zA-Z0-9]+)+)\s*\(/g)) {
    if (isWebApiMethod(m[2]!)) add(m[2]!, m.index);
  }
  for (const m of text.matchAll(/\.(filesUploadV2)\s*\(/g)) add(m[1]!, m.index);
  // Redis's `call('GET', …)` never matches: Web API method names are lower-case words joined by dots.
  for (const m of text.matchAll(/\b(?:apiCall|call)\s*(?:<[^>]*>)?\s*\(\s*['"`]([a-z]+(?:\.[a-zA-Z0-9]+)+)['"`]/g)) add(m[1]!, m.index);
  return calls;
}

const calls = ['src', 'handlers', 'jobs'].flatMap(sourceFiles).flatMap((file) => methodsCalledIn(readFileSync(file, 'utf8'), relative(ROOT, file)));
const called = [...new Set([...calls.map((c) => c.method), ...IMPLICIT])].sort();

interface SlackManifest {
  features?: { slash_commands?: unknown[] };
  oauth_config?: { scopes?: { bot?: string[] } };
}
const manifest = parseYaml(readFileSync(join(ROOT, 'manifests', 'slack-app.yaml'), 'utf8')) as SlackManifest;
const botScopes = manifest.oauth_config?.scopes?.bot ?? [];
/** Scopes a feature needs rather than a method: slash commands need `commands`. */
const featureScopes = (manifest.features?.slash_commands ?? []).length > 0 ? ['commands'] : [];

describe('the scan of the code for Web API calls', () => {
  it('recognises each way the code calls Slack (so the checks below can fail)', () => {
    const sample = [
      'await client.chat.postMessage({ channel });',
      'sender.chat.update({ channel, ts });',
      'app.client.views.publish({ user_id, view });',
      "await call('chat.getPermalink', () => client.chat.getPermalink({ channel, message_ts: ts }));",
      'client.filesUploadV2({ channel_id });',
      "await call('files.uploadV2', () => upload());",
      "client.apiCall('conversations.history', {});",
      'deps.chat.update(channel, ts, message);',
      "redis.call('GET', key);",
    ].join('\n');

    const found = methodsCalledIn(sample, 'sample.ts').map((c) => c.method);

    expect(found.sort()).toEqual(
      [
        'chat.postMessage',
        'chat.update',
        'views.publish',
        'chat.getPermalink',
        'chat.getPermalink',
        ...UPLOAD_V2,
        ...UPLOAD_V2,
        'conversations.history',
      ].sort(),
    );
  });

  it('finds the calls the bot is known to make', () => {
    expect(called).toEqual(expect.arrayContaining(['chat.postMessage', 'chat.update', 'conversations.replies', 'files.completeUploadExternal', 'usergroups.users.list', 'views.publish']));
  });
});

describe('the Slack app manifest against the code', () => {
  it('knows the scopes of every Web API method the code calls', () => {
    const unknown = calls.filter((c) => REQUIRED[c.method] === undefined).map((c) => `${c.method} (${c.where}): add it to REQUIRED with the bot scope Slack's method reference names`);
    expect(unknown).toEqual([]);
  });

  it('asks for every scope those methods need', () => {
    const missing = called.flatMap((method) => (REQUIRED[method]?.scopes ?? []).filter((scope) => !botScopes.includes(scope)).map((scope) => `${scope} (for ${method})`));
    expect(missing).toEqual([]);
  });

  it('asks for no scope the bot does not use', () => {
    const needed = new Set([...featureScopes, ...called.flatMap((method) => REQUIRED[method]?.scopes ?? [])]);
    expect(botScopes.filter((scope) => !needed.has(scope))).toEqual([]);
  });

  it('agrees with the scopes the Slack emulator enforces', () => {
    const emulated = Object.fromEntries(
      called
        .filter((method) => method in BOT_SCOPES)
        .map((method) => {
          const rule = BOT_SCOPES[method];
          const scopes = typeof rule === 'function' ? [rule('public'), rule('private')] : rule === null || rule === undefined ? [] : [rule];
          return [method, scopes];
        }),
    );
    const table = Object.fromEntries(Object.keys(emulated).map((method) => [method, REQUIRED[method]?.scopes]));
    expect(Object.keys(emulated).length).toBeGreaterThan(5);
    expect(emulated).toEqual(table);
  });
});
