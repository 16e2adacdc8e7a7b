import type { SlashCommand } from '@slack/bolt';
import type { Inventory } from '../src/config/inventory.ts';
import type { Command } from './parse-command.ts';

/**
 * The commands that only read: each costs the bot Redis and Slack calls, and `health` and `gates`
 * run talosctl against the cluster. `help` answers from the bot alone, and the mutating commands
 * keep their own rules (one operation per cluster, operators only), so neither is limited here.
 */
const LIMITED: ReadonlySet<Command['kind']> = new Set(['status', 'health', 'gates', 'record']);

export interface ReadRateLimiter {
  /** Undefined when the command may run (a token is spent), else the refusal to answer with. */
  refusal(command: Command, slack: SlashCommand): string | undefined;
}

/**
 * A token bucket per user and cluster, kept in memory: the check sits before the ack and must not
 * wait on Redis. Each replica keeps its own buckets, so with two replicas a person gets at most
 * twice the rate, still bounded.
 */
export function createReadRateLimiter(options: {
  perMinute: number;
  inventory: Inventory;
  now: () => number;
  onLimited?: (command: Command['kind']) => void;
}): ReadRateLimiter {
  const { perMinute, inventory } = options;
  const msPerToken = 60_000 / Math.max(perMinute, 1);
  const buckets = new Map<string, { tokens: number; at: number }>();

  /** The cluster a command is about: the one it names, else the channel's own; a channel of no cluster counts as one. */
  const clusterOf = (command: Command, slack: SlashCommand): string =>
    ('cluster' in command && typeof command.cluster === 'string' ? command.cluster : undefined) ??
    inventory.clusters.find((c) => c.channel === slack.channel_id)?.name ??
    `channel ${slack.channel_id}`;

  const refill = (bucket: { tokens: number; at: number }, now: number): void => {
    bucket.tokens = Math.min(perMinute, bucket.tokens + (now - bucket.at) / msPerToken);
    bucket.at = now;
  };

  return {
    refusal(command, slack) {
      if (perMinute === 0 || !LIMITED.has(command.kind)) return undefined;
      const now = options.now();
      const cluster = clusterOf(command, slack);
      const key = `${slack.user_id}\u0000${cluster}`;
      const bucket = buckets.get(key) ?? { tokens: perMinute, at: now };
      refill(bucket, now);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        buckets.set(key, bucket);
        // Full buckets are forgotten now and then, so the map holds only recent askers.
        if (buckets.size > 1000) for (const [k, b] of buckets) if ((refill(b, now), b.tokens >= perMinute)) buckets.delete(k);
        return undefined;
      }
      buckets.set(key, bucket);
      options.onLimited?.(command.kind);
      const waitSeconds = Math.max(1, Math.ceil(((1 - bucket.tokens) * msPerToken) / 1000));
      const about = cluster.startsWith('channel ') ? 'here' : `about *${cluster}*`;
      return `Too many read commands: you sent more than ${perMinute} a minute ${about}. Nothing was run; try \`/talos ${command.kind}\` again in ${waitSeconds} s. Operations in progress are not affected.`;
    },
  };
}
