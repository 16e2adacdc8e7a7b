import { readFile, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';

// The inventory names production's channel and people as a person writes them (#maint-production,
// @alice, @carol, @sre-approvers); the bot resolves them through the Slack emulator's
// conversations.list, users.list and usergroups.list with the app manifest's scopes, and the doctor
// shows the ids.
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    // The inventory is read again every second, so the edit below is taken up quickly.
    env: { CLUSTERS_RELOAD_SECONDS: '1' },
    inventory: {
      extra: { production: { channel: '#maint-production', operators: ['@alice', USERS.bob], approvers: ['@carol', '@sre-approvers'] } },
    },
  });
});

afterAll(async () => {
  await h?.stop();
});

describe('an inventory that names channels and people', () => {
  it('takes commands in the channel the #name resolved to, from the person the @handle resolved to, and the doctor prints the ids', async () => {
    // Act: alice is an operator only through @alice; the doctor is for operators.
    const report = await h.command('doctor', { user: USERS.alice, channel: CHANNELS.production });

    // Assert
    expect(report).toContain('Inventory names');
    expect(report).toContain(`\`#maint-production\` → \`${CHANNELS.production}\``);
    expect(report).toContain(`\`@alice\` → \`${USERS.alice}\` (user)`);
    expect(report).toContain(`\`@carol\` → \`${USERS.carol}\` (user)`);
    expect(report).toContain('`@sre-approvers` → `S0SRE` (user group)');
    expect(h.bot.logs()).toContain('resolved the inventory names through Slack');
  });

  it('refuses a reloaded inventory whose name resolves to nothing, naming it, and keeps the last good one', async () => {
    // Arrange
    const text = await readFile(h.inventoryPath, 'utf8');
    const broken = text.replace('#maint-production', '#maint-prod-typo');
    expect(broken).not.toBe(text);

    // Act
    await writeFile(h.inventoryPath, broken);
    const refusal = await h.slack.waitFor(
      () => h.slack.channelMessages(CHANNELS.production).find((m) => m.text.includes('inventory was refused')),
      { timeoutMs: 30_000, description: 'the refusal of the edited inventory' },
    );

    // Assert: the name is named with what to do; the bot still answers in the resolved channel.
    expect(refusal.text).toContain('Slack shows the bot no channel named #maint-prod-typo');
    expect(refusal.text).toContain('give the channel');
    const status = await h.command('status', { user: USERS.alice, channel: CHANNELS.production });
    expect(status).not.toContain('not a maintenance channel');
  });
});
