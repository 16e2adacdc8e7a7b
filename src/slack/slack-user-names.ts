// People's Slack display names, read with `users.info` (users:read).
import type { WebClient } from '@slack/web-api';

export interface UserNamesOptions {
  /** How long a name is trusted, in ms. Default 10 minutes: a renamed person shows under the new name soon after. */
  cacheMs?: number;
  /** The most names kept; the oldest goes first. Default 1000. */
  maxEntries?: number;
  nowMs?: () => number;
}

/** A person's display name, or undefined when Slack did not say (a failed call, an unknown user). Never throws. */
export type UserNames = (userId: string) => Promise<string | undefined>;

/**
 * The name a person shows in Slack: the profile's display name, or their full name when they set
 * none (Slack leaves `display_name` empty or absent then). Only answers are cached: a failed
 * lookup is asked again next time, and its caller falls back to the id.
 */
export function createUserNames(client: Pick<WebClient, 'users'>, options: UserNamesOptions = {}): UserNames {
  const cacheMs = options.cacheMs ?? 600_000;
  const maxEntries = options.maxEntries ?? 1000;
  const nowMs = options.nowMs ?? Date.now;
  const cache = new Map<string, { name: string; at: number }>();
  return async (userId) => {
    const cached = cache.get(userId);
    if (cached !== undefined && nowMs() - cached.at < cacheMs) return cached.name;
    try {
      const answer = await client.users.info({ user: userId });
      const profile = answer.user?.profile;
      const name = [profile?.display_name, profile?.real_name, answer.user?.real_name].find(
        (n) => typeof n === 'string' && n.trim() !== '',
      );
      if (name === undefined) return undefined;
      cache.delete(userId);
      cache.set(userId, { name, at: nowMs() });
      if (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
      return name;
    } catch {
      return undefined;
    }
  };
}
