import { describe, expect, it } from 'vitest';
import {
  actions,
  context,
  escapeMrkdwn,
  fields,
  formatDuration,
  formatTime,
  header,
  mention,
  mentionUser,
  plainTime,
  plainTimes,
  preformatted,
  section,
  truncate,
} from '../../../src/chat/blocks.ts';
import { blockKitProblems } from '../../support/block-kit-limits.ts';

/** The mrkdwn text of a section or context block. */
function textOfBlock(block: Record<string, unknown>): string {
  const text = (block['text'] ?? (block['elements'] as unknown[] | undefined)?.[0]) as { text: string };
  return text.text;
}

/** `count` evidence lines of `length` characters, numbered so their order shows. */
function evidence(count: number, length: number): string[] {
  return Array.from({ length: count }, (_, i) => `line ${String(i + 1).padStart(3, '0')} `.padEnd(length, 'x'));
}

describe('truncate', () => {
  it('keeps text that fits and cuts longer text to the limit with an ellipsis', () => {
    // Act
    const fits = truncate('abcde', 5);
    const cut = truncate('abcdef', 5);

    // Assert
    expect(fits).toBe('abcde');
    expect(cut).toBe('abcd…');
  });
});

describe('block builders stay inside Slack limits', () => {
  it('cuts a header to 150 characters', () => {
    // Act
    const block = header('h'.repeat(500));

    // Assert
    expect(textOfBlock(block)).toHaveLength(150);
    expect(blockKitProblems({ text: '', blocks: [block] })).toEqual([]);
  });

  it('cuts section and context text to 3000 characters', () => {
    // Act
    const blocks = [section('s'.repeat(10_000)), context('c'.repeat(10_000))];

    // Assert
    expect(blocks.map(textOfBlock).map((t) => t.length)).toEqual([3000, 3000]);
    expect(blockKitProblems({ text: '', blocks })).toEqual([]);
  });

  it('keeps at most ten fields of at most 2000 characters', () => {
    // Arrange
    const pairs = Array.from({ length: 14 }, (_, i): [string, string] => [`k${i}`, 'v'.repeat(5000)]);

    // Act
    const block = fields(pairs);

    // Assert
    expect((block['fields'] as unknown[]).length).toBe(10);
    expect(blockKitProblems({ text: '', blocks: [block] })).toEqual([]);
  });

  it('cuts a long block id and long button and confirmation texts', () => {
    // Act
    const block = actions(`plan-${'x'.repeat(400)}`, [
      {
        text: 'Start '.repeat(30),
        actionId: 'talos-op-start',
        value: 'op-1a2b3c4d5e.n0nce',
        confirm: { title: 't'.repeat(200), text: 'c'.repeat(1000), confirm: 'y'.repeat(50), deny: 'n'.repeat(50) },
      },
    ]);

    // Assert
    expect(block['block_id']).toHaveLength(255);
    expect(blockKitProblems({ text: '', blocks: [block] })).toEqual([]);
  });
});

describe('preformatted', () => {
  it('shows short evidence whole, in a code block', () => {
    // Act
    const block = preformatted(['NODE         MEMBER', '10.0.30.11   talos-cp-1']);

    // Assert
    expect(textOfBlock(block)).toBe('```NODE         MEMBER\n10.0.30.11   talos-cp-1```');
  });

  it('escapes raw lines exactly once, so a mention or a link in tool output stays text', () => {
    // Act
    const block = preformatted(['pinged <@U123> and <!channel> & more', '> quoted']);

    // Assert
    expect(textOfBlock(block)).toBe('```pinged &lt;@U123&gt; and &lt;!channel&gt; &amp; more\n&gt; quoted```');
  });

  it('counts the escaped length against the section limit', () => {
    // Arrange: each line grows from 500 to 2000 characters when escaped.
    const lines = ['<'.repeat(500), '&'.repeat(500)];

    // Act
    const block = preformatted(lines);

    // Assert
    expect(textOfBlock(block)).toBe(`\`\`\`${'&lt;'.repeat(500)}\n… 1 more line(s)\`\`\``);
    expect(blockKitProblems({ text: '', blocks: [block] })).toEqual([]);
  });

  it('keeps the head of 200 lines of 500 characters and says how many lines were cut', () => {
    // Arrange
    const lines = evidence(200, 500);

    // Act
    const block = preformatted(lines);

    // Assert
    expect(textOfBlock(block)).toBe(`\`\`\`${lines.slice(0, 5).join('\n')}\n… 195 more line(s)\`\`\``);
    expect(blockKitProblems({ text: '', blocks: [block] })).toEqual([]);
  });

  it('fits many short lines up to the limit and counts the rest', () => {
    // Arrange
    const lines = evidence(1000, 20);

    // Act
    const text = textOfBlock(preformatted(lines));

    // Assert
    const shown = text.split('\n').length - 1;
    expect(text.length).toBeLessThanOrEqual(3000);
    expect(text).toContain(lines[shown - 1]);
    expect(text).not.toContain(lines[shown]);
    expect(text.endsWith(`\n… ${1000 - shown} more line(s)\`\`\``)).toBe(true);
  });

  it('stays inside the section limit for any mix of line lengths', () => {
    // Arrange
    const lines = Array.from({ length: 300 }, (_, i) => 'y'.repeat((i * 997) % 3500));

    // Act
    const block = preformatted(lines);

    // Assert
    expect(blockKitProblems({ text: '', blocks: [block] })).toEqual([]);
    expect(textOfBlock(block)).toMatch(/ more line\(s\)```$/);
  });
});

describe('escapeMrkdwn', () => {
  it('escapes the three characters Slack treats as control characters, ampersand first', () => {
    // Act
    const escaped = escapeMrkdwn('<!channel> roles <none> & <https://evil.example|click> &lt;');

    // Assert
    expect(escaped).toBe('&lt;!channel&gt; roles &lt;none&gt; &amp; &lt;https://evil.example|click&gt; &amp;lt;');
  });

  it('leaves text without control characters unchanged', () => {
    // Act
    const escaped = escapeMrkdwn('etcd has no leader on 10.0.20.205: *stopped*');

    // Assert
    expect(escaped).toBe('etcd has no leader on 10.0.20.205: *stopped*');
  });
});

describe('formatting helpers', () => {
  it('mentions a user by id', () => {
    // Assert
    expect(mentionUser('U0ALICE')).toBe('<@U0ALICE>');
  });

  it.each([
    [250, '250 ms'],
    [1500, '1.5 s'],
    [59_949, '59.9 s'],
    [125_000, '2 min 5 s'],
  ])('formats %i ms as %s', (ms, text) => {
    // Assert
    expect(formatDuration(ms)).toBe(text);
  });

  it('mentions users and user groups so Slack notifies them', () => {
    // Assert
    expect(mention('U0CAROL')).toBe('<@U0CAROL>');
    expect(mention('W0GRID')).toBe('<@W0GRID>');
    expect(mention('S0SRE')).toBe('<!subteam^S0SRE>');
  });

  it('formats a point in time as a Slack date token, each reader in their own zone, with a UTC fallback', () => {
    // Assert
    expect(formatTime('2026-11-29T23:51:27.123Z')).toBe('<!date^1795996287^{date_short_pretty} {time}|2026-11-29 23:51 UTC>');
    expect(formatTime(new Date('2026-12-01T06:30:00Z'))).toBe('<!date^1796106600^{date_short_pretty} {time}|2026-12-01 06:30 UTC>');
    expect(plainTime('2026-12-01T06:30:59Z')).toBe('2026-12-01 06:30 UTC');
  });

  it('keeps a formatted time through escaping, and nothing else that looks like one', () => {
    // Arrange
    const time = formatTime('2026-12-01T06:30:00Z');
    const forged = '<!date^1796106600^{date_short_pretty} {time}^https://evil.example|2026-12-01 06:30 UTC>';

    // Act
    const escaped = escapeMrkdwn(`opens ${time} <!here> & ${forged}`);

    // Assert
    expect(escaped).toBe(`opens ${time} &lt;!here&gt; &amp; ${forged.replace(/</g, '&lt;').replace(/>/g, '&gt;')}`);
  });

  it('shows a time as its fallback where Slack does not render tokens (a code block, a file)', () => {
    // Arrange
    const time = formatTime('2026-12-01T06:30:00Z');

    // Act
    const block = preformatted([`window opens ${time}`]);

    // Assert
    expect(plainTimes(`opens ${time}.`)).toBe('opens 2026-12-01 06:30 UTC.');
    expect(textOfBlock(block)).toBe('```window opens 2026-12-01 06:30 UTC```');
  });
});
