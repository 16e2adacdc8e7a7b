// Channel membership read from Slack's `conversations.members` (channels:read for public
// channels, groups:read for private ones the bot is in).
import type { WebClient } from '@slack/web-api';
import type { ChannelMembers } from '../port/channel-members.ts';

/** Slack's largest page of `conversations.members`. */
const PAGE = 1000;

export interface ChannelMembersOptions {
  /** How long a channel's member list is trusted, in ms. Default 60 s: someone removed from a channel loses the detail within a minute. */
  cacheMs?: number;
  /** The clock of the cache, in ms. */
  nowMs?: () => number;
}

/**
 * Members of a channel, read through every page and cached briefly per channel. Only a complete
 * answer is cached: a failed read is asked again next time, and the caller is told it failed.
 */
export function createChannelMembers(client: WebClient, options: ChannelMembersOptions = {}): ChannelMembers {
  const cacheMs = options.cacheMs ?? 60_000;
  const nowMs = options.nowMs ?? Date.now;
  const cache = new Map<string, { members: ReadonlySet<string>; at: number }>();
  // Several viewers opening the Home at once share one read of a channel.
  const reading = new Map<string, Promise<ReadonlySet<string>>>();

  const read = async (channel: string): Promise<ReadonlySet<string>> => {
    const members = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await client.conversations.members({ channel, limit: PAGE, ...(cursor === undefined ? {} : { cursor }) });
      for (const member of page.members ?? []) members.add(member);
      cursor = page.response_metadata?.next_cursor || undefined;
    } while (cursor !== undefined);
    cache.set(channel, { members, at: nowMs() });
    return members;
  };

  const membersOf = (channel: string): Promise<ReadonlySet<string>> => {
    const cached = cache.get(channel);
    if (cached !== undefined && nowMs() - cached.at < cacheMs) return Promise.resolve(cached.members);
    const pending = reading.get(channel);
    if (pending !== undefined) return pending;
    const fresh = read(channel).finally(() => reading.delete(channel));
    reading.set(channel, fresh);
    return fresh;
  };

  return {
    async isMember(channel, user) {
      return (await membersOf(channel)).has(user);
    },
  };
}
