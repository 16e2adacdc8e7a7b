import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { approveUntilDone, clickStart, requestUpgrade } from '../support/upgrade-flow.ts';
import type { Message } from '../slack-emulator/types.ts';

/**
 * What a production Talos upgrade of three control planes may cost the channel, as the demo runs it
 * (staging rehearsed first, @alice starts, @carol approves each control plane). The README states
 * these caps; a change that posts more must say why there.
 */
const MAX_CHANNEL_MESSAGES = 5;
const MAX_PAGES = 6;

let h: Harness;

beforeEach(async () => {
  h = await startHarness();
});

afterEach(async () => {
  await h?.stop();
});

/** A person (`<@U…>`) or a group (`<!subteam^S…>`) named in a text or a block: Slack notifies them. */
const MENTION = /<@[UW][A-Z0-9]+>|<!subteam\^S[A-Z0-9]+>/;

/** What a reader sees of a text: a link shows its label, not its target. */
function visible(text: string): string {
  return text.replace(/<(https?:\/\/[^|>]+)\|([^>]*)>/g, '$2');
}

/** Every text of a message version: its fallback and its blocks (sections, fields, context, buttons, dialogs). */
function textsOf(version: { text: string; blocks?: unknown[] }): string {
  return visible(`${version.text}\n${JSON.stringify(version.blocks ?? [])}`);
}

describe('a calm channel: the production Talos upgrade as the demo runs it', () => {
  it('posts few channel messages, pages few times, and shows no temporary path or full hash', async () => {
    // Arrange: the staging rehearsal the runbook asks for, as in the demo.
    const rehearsal = await requestUpgrade(h, 'upgrade talos v1.12.11', { channel: CHANNELS.staging });
    await clickStart(h, rehearsal, USERS.alice, CHANNELS.staging);
    await approveUntilDone(h, rehearsal, CHANNELS.staging, USERS.carol);
    const before = new Set(h.slack.channelMessages(CHANNELS.production).map((m) => m.ts));

    // Act
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11');
    await clickStart(h, plan, USERS.alice);
    const done = await approveUntilDone(h, plan, CHANNELS.production, USERS.carol);
    await h.slack.waitFor(() => h.slack.thread(CHANNELS.production, plan.root.ts).some((m) => m.text.includes('Terraform follow-up')), {
      timeoutMs: 30_000,
    });

    // Assert
    expect(done.text).toContain('completed');
    const channelLevel = h.slack.channelMessages(CHANNELS.production).filter((m) => !before.has(m.ts));
    const roots = channelLevel.filter((m) => m.thread_ts === undefined || m.thread_ts === m.ts);
    const posted: Message[] = [...channelLevel, ...roots.flatMap((r) => h.slack.thread(CHANNELS.production, r.ts))];
    const unique = [...new Map(posted.map((m) => [m.ts, m])).values()];
    // A page is a posted message whose text or blocks name someone; an edit notifies nobody.
    const pages = unique.filter((m) => {
      const first = h.slack.versions(CHANNELS.production, m.ts)[0] ?? m;
      return MENTION.test(`${first.text}\n${JSON.stringify(first.blocks ?? [])}`);
    });
    expect(channelLevel.length).toBeGreaterThanOrEqual(4); // the root and one approval request per control plane
    expect(channelLevel.length).toBeLessThanOrEqual(MAX_CHANNEL_MESSAGES);
    expect(pages.length).toBeGreaterThanOrEqual(3); // each control plane's approval pages its approvers (in its context block)
    expect(pages.length).toBeLessThanOrEqual(MAX_PAGES);

    const shown = unique.flatMap((m) => h.slack.versions(CHANNELS.production, m.ts).map((v) => ({ ts: m.ts, text: textsOf(v) })));
    expect(shown.length).toBeGreaterThan(unique.length - 1);
    expect(shown.filter((v) => v.text.includes('/tmp/'))).toEqual([]);
    // A whole hash appears only where a person must compare it, as a ready `sha256sum -c` line; nowhere else.
    const checkLines = /echo '[0-9a-f]{64} {2}[\w.-]+' \| sha256sum -c/g;
    expect(shown.filter((v) => /[0-9a-f]{40,}/.test(v.text.replace(checkLines, '')))).toEqual([]);
    expect(shown.some((v) => v.text.replace(checkLines, '') !== v.text)).toBe(true);
  }, 180_000);
});
