import type { SlashCommand } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import { parseCommand, type Command } from '../../../handlers/parse-command.ts';
import { createReadRateLimiter } from '../../../handlers/read-rate-limit.ts';

const inventory = { clusters: [{ name: 'production', channel: 'C0PRD' }] } as never;

function command(text: string): Command {
  const parsed = parseCommand(text);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.command;
}

const slack = (user: string, channel = 'C0PRD') => ({ user_id: user, channel_id: channel }) as SlashCommand;

describe('the read-command rate limit', () => {
  it('lets a full bucket through, refuses the next read, and lets one more through as each token comes back', () => {
    // Arrange
    let now = 0;
    const limited: string[] = [];
    const limiter = createReadRateLimiter({ perMinute: 6, inventory, now: () => now, onLimited: (c) => limited.push(c) });

    // Act
    const first = Array.from({ length: 6 }, () => limiter.refusal(command('status'), slack('U1')));
    const seventh = limiter.refusal(command('gates'), slack('U1'));
    now += 9_999;
    const early = limiter.refusal(command('status'), slack('U1'));
    now += 1;
    const afterATenth = limiter.refusal(command('status'), slack('U1'));

    // Assert
    expect(first).toEqual(Array(6).fill(undefined));
    expect(seventh).toMatch(/more than 6 a minute about \*production\*\. Nothing was run; try `\/talos gates` again in 10 s\./);
    expect(early).toMatch(/again in 1 s\./);
    expect(afterATenth).toBeUndefined();
    expect(limited).toEqual(['gates', 'status']);
  });

  it('never limits help or a mutating command, and is off at 0', () => {
    const strict = createReadRateLimiter({ perMinute: 1, inventory, now: () => 0 });
    const off = createReadRateLimiter({ perMinute: 0, inventory, now: () => 0 });
    for (let i = 0; i < 5; i += 1) {
      expect(strict.refusal(command('help'), slack('U1'))).toBeUndefined();
      expect(strict.refusal(command('upgrade talos v1.12.11'), slack('U1'))).toBeUndefined();
      expect(off.refusal(command('status'), slack('U1'))).toBeUndefined();
    }
  });

  it('keeps one bucket per person and cluster: a named cluster is its own, whatever the channel', () => {
    const limiter = createReadRateLimiter({ perMinute: 1, inventory, now: () => 0 });
    expect(limiter.refusal(command('health'), slack('U1'))).toBeUndefined();
    expect(limiter.refusal(command('health'), slack('U2'))).toBeUndefined();
    expect(limiter.refusal(command('health staging'), slack('U1'))).toBeUndefined();
    expect(limiter.refusal(command('health production'), slack('U1'))).toMatch(/about \*production\*/);
  });
});
