import { WebClient } from '@slack/web-api';
import { afterEach, describe, expect, it } from 'vitest';
import { createChannelMembers } from '../../../src/slack/slack-channel-members.ts';
import { type SlackEmulator, startSlackEmulator } from '../../slack-emulator/index.ts';

// Channel membership read from the Slack emulator, which grants the manifest's scopes and answers
// `conversations.members` page by page, as Slack does.

const PUBLIC = 'C0MAINTPRD';
const PRIVATE = 'G0MAINTSEC';
const ABSENT = 'G0NOTINVITED';

let emu: SlackEmulator | undefined;

afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

async function start(members: string[]): Promise<{ emu: SlackEmulator; client: WebClient }> {
  emu = await startSlackEmulator({
    channels: [
      { id: PUBLIC, name: 'maint-production', members },
      { id: PRIVATE, name: 'maint-secret', members: ['U0EVE'] },
      { id: ABSENT, name: 'maint-hidden', botMember: false, members: ['U0EVE'] },
    ],
  });
  return { emu, client: new WebClient(emu.botToken, { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } }) };
}

describe('createChannelMembers', () => {
  it('finds a member on a later page of a large channel', async () => {
    // Arrange: 2500 people, Eve the last.
    const many = Array.from({ length: 2499 }, (_, i) => `U0P${String(i).padStart(5, '0')}`);
    const { emu, client } = await start([...many, 'U0EVE']);
    const members = createChannelMembers(client);

    // Act
    const eve = await members.isMember(PUBLIC, 'U0EVE');
    const mallory = await members.isMember(PUBLIC, 'U0MALLORY');

    // Assert: three pages, read once for both questions.
    expect(eve).toBe(true);
    expect(mallory).toBe(false);
    expect(emu.callsTo('conversations.members').map((c) => c.ok)).toEqual([true, true, true]);
  });

  it('reads a private channel the bot is in, and throws for one it is not in', async () => {
    // Arrange
    const { client } = await start([]);
    const members = createChannelMembers(client);

    // Act / Assert
    expect(await members.isMember(PRIVATE, 'U0EVE')).toBe(true);
    await expect(members.isMember(ABSENT, 'U0EVE')).rejects.toThrow('channel_not_found');
  });

  it('trusts an answer for the cache time only, per channel: a member who left loses access after it', async () => {
    // Arrange
    let nowMs = 1_000_000;
    const { emu, client } = await start(['U0EVE']);
    const members = createChannelMembers(client, { cacheMs: 60_000, nowMs: () => nowMs });
    expect(await members.isMember(PUBLIC, 'U0EVE')).toBe(true);

    // Act: Eve leaves.
    emu.setChannelMembers(PUBLIC, []);
    nowMs += 59_000;
    const withinCache = await members.isMember(PUBLIC, 'U0EVE');
    nowMs += 2_000;
    const afterCache = await members.isMember(PUBLIC, 'U0EVE');

    // Assert
    expect(withinCache).toBe(true);
    expect(afterCache).toBe(false);
    expect(emu.callsTo('conversations.members')).toHaveLength(2);
  });

  it('does not keep a failed read: the next question asks Slack again', async () => {
    // Arrange
    const { emu, client } = await start(['U0EVE']);
    const members = createChannelMembers(client);
    emu.faults.serverError({ methods: ['conversations.members'], status: 503 });

    // Act
    const failed = members.isMember(PUBLIC, 'U0EVE');
    await expect(failed).rejects.toThrow('503');
    const next = await members.isMember(PUBLIC, 'U0EVE');

    // Assert
    expect(next).toBe(true);
  });

  it('is refused without the read scopes, as Slack refuses it', async () => {
    // Arrange: an installation from a manifest without channels:read.
    const { emu, client } = await start(['U0EVE']);
    emu.setScopes(emu.scopes.filter((s) => s !== 'channels:read'));

    // Act / Assert
    await expect(createChannelMembers(client).isMember(PUBLIC, 'U0EVE')).rejects.toThrow('missing_scope');
  });
});
