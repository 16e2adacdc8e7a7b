import type { WebClient } from '@slack/web-api';

/**
 * Decides whether a Slack user is in an inventory list that may hold user ids (`U…`, `W…`)
 * and user-group ids (`S…`). Group membership is read from Slack and cached briefly,
 * so a handler stays well under Slack's 3-second ack budget.
 */
export interface Authorizer {
  /** @throws MembershipUnknown when a group that could grant it cannot be read from Slack */
  isMember(user: string, allowed: readonly string[]): Promise<boolean>;
}

/**
 * A user-group Slack would not list: the user may or may not be in it. Nothing is allowed (the
 * check fails closed), and the user is told to try again rather than that they lack the role.
 */
export class MembershipUnknown extends Error {
  readonly group: string;

  constructor(group: string, cause: unknown) {
    super(
      `Your membership of the user group <!subteam^${group}> could not be checked with Slack (${slackError(cause)}). Nothing was done; try again in a minute.`,
      { cause },
    );
    this.name = 'MembershipUnknown';
    this.group = group;
  }
}

/** Slack's error code (`ratelimited`, `missing_scope`), else the error's message. */
export function slackError(error: unknown): string {
  const data = (error as { data?: { error?: unknown } } | undefined)?.data;
  if (typeof data?.error === 'string') return data.error;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : String(error);
}

export function createAuthorizer(
  client: WebClient,
  options: { cacheMs?: number; onLookupFailure?: (group: string, error: string) => void } = {},
): Authorizer {
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
      let unreadable: MembershipUnknown | undefined;
      for (const id of allowed) {
        if (!id.startsWith('S')) continue;
        try {
          if ((await groupMembers(id)).has(user)) return true;
        } catch (error) {
          options.onLookupFailure?.(id, slackError(error));
          // Another group may still grant it; only when none does is the answer unknown.
          unreadable ??= new MembershipUnknown(id, error);
        }
      }
      if (unreadable !== undefined) throw unreadable;
      return false;
    },
  };
}
