import type { WebClient } from '@slack/web-api';

/**
 * Decides whether a Slack user is in an inventory list that may hold user ids (`U…`, `W…`)
 * and user-group ids (`S…`). Group membership is read from Slack and cached briefly,
 * so a handler stays well under Slack's 3-second ack budget.
 */
export interface Authorizer {
  isMember(user: string, allowed: readonly string[]): Promise<boolean>;
}

export function createAuthorizer(client: WebClient, options: { cacheMs?: number } = {}): Authorizer {
  const cacheMs = options.cacheMs ?? 60_000;
  const groups = new Map<string, { users: Set<string>; at: number }>();
  const groupMembers = async (group: string): Promise<Set<string>> => {
    const cached = groups.get(group);
    if (cached && Date.now() - cached.at < cacheMs) return cached.users;
    const response = await client.usergroups.users.list({ usergroup: group });
    const users = new Set(response.users ?? []);
    groups.set(group, { users, at: Date.now() });
    return users;
  };
  return {
    async isMember(user, allowed) {
      if (allowed.includes(user)) return true;
      for (const id of allowed) {
        if (!id.startsWith('S')) continue;
        // An unreadable group grants nothing: authorization fails closed.
        const members = await groupMembers(id).catch(() => new Set<string>());
        if (members.has(user)) return true;
      }
      return false;
    },
  };
}
