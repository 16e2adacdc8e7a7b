import { afterEach, describe, expect, it } from 'vitest';
import { readAppManifest } from './app-manifest.ts';
import { type JsonObject, type SlackEmulator, startSlackEmulator } from './index.ts';

// Scopes and channel membership: the emulated installation holds exactly the bot scopes of
// manifests/slack-app.yaml, and the bot sees a private channel only once invited.

const PUBLIC = 'C0OPS';
const PRIVATE = 'G0SECRET';
const ANA = 'U0ANA';

let emu: SlackEmulator | undefined;

afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

async function start(options: Parameters<typeof startSlackEmulator>[0] = {}): Promise<SlackEmulator> {
  emu = await startSlackEmulator({
    channels: [
      { id: PUBLIC, name: 'ops' },
      { id: PRIVATE, name: 'maint-secret', botMember: false },
      { id: 'C0PRIVATE', name: 'maint-private', isPrivate: true },
      { id: 'C0ELSEWHERE', name: 'elsewhere', botMember: false },
    ],
    users: [{ id: ANA, name: 'ana' }],
    ...options,
  });
  return emu;
}

/** A Web API call as plain JSON, with the headers Slack sends about scopes. */
async function api(method: string, body: JsonObject): Promise<{ json: JsonObject; scopes: string | null; accepted: string | null }> {
  const response = await fetch(`${emu!.apiUrl}${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${emu!.botToken}` },
    body: JSON.stringify(body),
  });
  return {
    json: (await response.json()) as JsonObject,
    scopes: response.headers.get('x-oauth-scopes'),
    accepted: response.headers.get('x-accepted-oauth-scopes'),
  };
}

async function postedTs(channel: string): Promise<string> {
  const { json } = await api('chat.postMessage', { channel, text: 'root' });
  expect(json).toMatchObject({ ok: true });
  return String(json.ts);
}

describe('scopes', () => {
  it("grants exactly the manifest's bot scopes by default and names them on every answer", async () => {
    // Arrange
    await start();

    // Act
    const { json, scopes } = await api('auth.test', {});

    // Assert
    expect(json.ok).toBe(true);
    expect(emu!.scopes.sort()).toEqual(readAppManifest().botScopes.sort());
    expect(scopes?.split(',').sort()).toEqual(readAppManifest().botScopes.sort());
  });

  it('answers missing_scope with the scope needed and the scopes provided, and does nothing', async () => {
    // Arrange
    await start({ scopes: ['commands', 'files:write'] });

    // Act
    const { json, accepted } = await api('chat.postMessage', { channel: PUBLIC, text: 'hello' });

    // Assert
    expect(json).toEqual({ ok: false, error: 'missing_scope', needed: 'chat:write', provided: 'commands,files:write' });
    expect(accepted).toBe('chat:write');
    expect(emu!.channelMessages(PUBLIC)).toEqual([]);
  });

  it('asks channels:history to read a thread in a public channel and groups:history in a private one', async () => {
    // Arrange
    await start({ scopes: ['chat:write', 'channels:history'] });
    const publicTs = await postedTs(PUBLIC);
    const privateTs = await postedTs('C0PRIVATE');

    // Act
    const inPublic = await api('conversations.replies', { channel: PUBLIC, ts: publicTs });
    const inPrivate = await api('conversations.replies', { channel: 'C0PRIVATE', ts: privateTs });

    // Assert
    expect(inPublic.json.ok).toBe(true);
    expect(inPublic.accepted).toBe('channels:history');
    expect(inPrivate.json).toEqual({
      ok: false,
      error: 'missing_scope',
      needed: 'groups:history',
      provided: 'chat:write,channels:history',
    });
    expect(inPrivate.accepted).toBe('groups:history');
  });

  it('needs no scope for chat.getPermalink and views.publish, and files:write for uploads', async () => {
    // Arrange
    await start({ scopes: ['chat:write'] });
    const ts = await postedTs(PUBLIC);

    // Act
    const permalink = await api('chat.getPermalink', { channel: PUBLIC, message_ts: ts });
    const home = await api('views.publish', { user_id: ANA, view: { type: 'home', blocks: [] } });
    const upload = await api('files.getUploadURLExternal', { filename: 'record.md', length: 3 });

    // Assert
    expect(permalink.json.ok).toBe(true);
    expect(home.json.ok).toBe(true);
    expect(upload.json).toMatchObject({ ok: false, error: 'missing_scope', needed: 'files:write' });
  });

  it('takes new scopes at run time, as a reinstall with another manifest would', async () => {
    // Arrange: an install from a manifest without users:read.
    await start();
    emu!.setScopes(emu!.scopes.filter((scope) => scope !== 'users:read'));
    const before = await api('users.info', { user: ANA });

    // Act
    emu!.setScopes([...emu!.scopes, 'users:read']);
    const after = await api('users.info', { user: ANA });

    // Assert
    expect(before.json).toMatchObject({ ok: false, error: 'missing_scope', needed: 'users:read' });
    expect(after.json).toMatchObject({ ok: true, user: { id: ANA } });
  });
});

describe('channel membership', () => {
  it('hides a private channel the bot is not in behind channel_not_found, for posting and reading alike', async () => {
    // Arrange
    await start();

    // Act
    const post = await api('chat.postMessage', { channel: PRIVATE, text: 'hello' });
    const history = await api('conversations.history', { channel: PRIVATE });

    // Assert
    expect(post.json).toEqual({ ok: false, error: 'channel_not_found' });
    expect(history.json).toEqual({ ok: false, error: 'channel_not_found' });
  });

  it('works in the private channel once the bot is invited', async () => {
    // Arrange
    await start();
    emu!.setBotMember(PRIVATE, true);

    // Act
    const ts = await postedTs(PRIVATE);
    const replies = await api('conversations.replies', { channel: PRIVATE, ts });

    // Assert
    expect(replies.json).toMatchObject({ ok: true, messages: [{ text: 'root' }] });
  });

  it('answers not_in_channel in a public channel the bot is not in, unless it may post publicly', async () => {
    // Arrange
    await start();

    // Act
    const refused = await api('chat.postMessage', { channel: 'C0ELSEWHERE', text: 'hello' });
    const unread = await api('conversations.history', { channel: 'C0ELSEWHERE' });
    emu!.setScopes([...emu!.scopes, 'chat:write.public']);
    const publicPost = await api('chat.postMessage', { channel: 'C0ELSEWHERE', text: 'hello' });

    // Assert
    expect(refused.json).toEqual({ ok: false, error: 'not_in_channel' });
    expect(unread.json).toEqual({ ok: false, error: 'not_in_channel' });
    expect(publicPost.json.ok).toBe(true);
  });

  it('refuses the bot in a channel it was removed from', async () => {
    // Arrange
    await start();
    await postedTs(PUBLIC);

    // Act
    emu!.setBotMember(PUBLIC, false);
    const post = await api('chat.postMessage', { channel: PUBLIC, text: 'again' });

    // Assert
    expect(post.json).toEqual({ ok: false, error: 'not_in_channel' });
    expect(emu!.channelMessages(PUBLIC).map((m) => m.text)).toEqual(['root']);
  });
});
