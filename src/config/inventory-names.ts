import { ConfigError } from './config-error.ts';
import type { ClusterConfig, Inventory } from './inventory.ts';

/**
 * The inventory may name a channel `#maint-production` and people `@alice` or a group
 * `@sre-approvers`; everything past start-up compares ids. This turns the names into ids through a
 * lookup of the workspace (the Slack adapter: conversations.list, users.list, usergroups.list, with
 * the scopes the app manifest grants), or refuses the inventory naming each name that resolves to
 * nothing, or to more than one thing.
 */
export interface NameLookup {
  /** Channel name (without `#`) → id: public channels, and private ones the bot is in. */
  channels(): Promise<ReadonlyMap<string, string>>;
  /** Handle (without `@`) → user id. */
  users(): Promise<ReadonlyMap<string, string>>;
  /** Handle (without `@`) → user-group id. */
  usergroups(): Promise<ReadonlyMap<string, string>>;
}

/** A name the inventory used and the id it stands for, for `/talos doctor`. */
export interface ResolvedName {
  name: string;
  id: string;
  kind: 'channel' | 'user' | 'user group';
  clusters: string[];
}

export const isChannelName = (value: string): boolean => value.startsWith('#');
export const isHandle = (value: string): boolean => value.startsWith('@');

/** The inventory with every `#channel` and `@handle` replaced by its id, and what each stood for. */
export async function resolveInventoryNames(
  inventory: Inventory,
  lookup: NameLookup,
  where: string,
): Promise<{ inventory: Inventory; resolved: ResolvedName[] }> {
  const wantsChannels = inventory.clusters.some((c) => isChannelName(c.channel));
  const wantsPeople = inventory.clusters.some((c) => [...c.operators, ...c.approvers].some(isHandle));
  if (!wantsChannels && !wantsPeople) return { inventory, resolved: [] };
  // Only the lists a name needs are read: an inventory of ids asks Slack nothing.
  const [channels, users, groups] = await Promise.all([
    wantsChannels ? lookup.channels() : new Map<string, string>(),
    wantsPeople ? lookup.users() : new Map<string, string>(),
    wantsPeople ? lookup.usergroups() : new Map<string, string>(),
  ]);
  const problems: string[] = [];
  const resolved = new Map<string, ResolvedName>();
  const note = (name: string, id: string, kind: ResolvedName['kind'], cluster: string): string => {
    const known = resolved.get(name) ?? { name, id, kind, clusters: [] };
    if (!known.clusters.includes(cluster)) known.clusters.push(cluster);
    resolved.set(name, known);
    return id;
  };

  const channelOf = (cluster: ClusterConfig): string => {
    if (!isChannelName(cluster.channel)) return cluster.channel;
    const id = channels.get(cluster.channel.slice(1));
    if (id !== undefined) return note(cluster.channel, id, 'channel', cluster.name);
    problems.push(
      `clusters.${cluster.name}.channel: Slack shows the bot no channel named ${cluster.channel}. Check the spelling; a private channel is visible only once the bot is in it (\`/invite\` it there), or give the channel's id (C…)`,
    );
    return cluster.channel;
  };
  const personOf = (cluster: ClusterConfig, key: 'operators' | 'approvers', entry: string, index: number): string => {
    if (!isHandle(entry)) return entry;
    const handle = entry.slice(1);
    const user = users.get(handle);
    const group = groups.get(handle);
    if (user !== undefined && group !== undefined) {
      problems.push(
        `clusters.${cluster.name}.${key}.${index}: ${entry} names both a person (${user}) and a user group (${group}): give the id you mean`,
      );
      return entry;
    }
    if (user !== undefined) return note(entry, user, 'user', cluster.name);
    if (group !== undefined) return note(entry, group, 'user group', cluster.name);
    problems.push(
      `clusters.${cluster.name}.${key}.${index}: no person or user group in the workspace has the handle ${entry}. Check the spelling (the handle, not the full name), or give the id (U… or S…)`,
    );
    return entry;
  };

  const clusters = inventory.clusters.map((cluster) => ({
    ...cluster,
    channel: channelOf(cluster),
    operators: cluster.operators.map((entry, i) => personOf(cluster, 'operators', entry, i)),
    approvers: cluster.approvers.map((entry, i) => personOf(cluster, 'approvers', entry, i)),
  }));
  if (problems.length > 0) throw new ConfigError(where, problems);
  return { inventory: { ...inventory, clusters }, resolved: [...resolved.values()] };
}
