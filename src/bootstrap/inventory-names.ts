import { ConfigError } from '../config/config-error.ts';
import { resolveInventoryNames, type NameLookup, type ResolvedName } from '../config/inventory-names.ts';
import type { Inventory } from '../config/inventory.ts';
import type { Logger } from '../log/logger.ts';

/** The names the inventory in force used and their ids, for `/talos doctor`; replaced on each reload. */
export interface InventoryNames {
  current: readonly ResolvedName[];
}

/**
 * Resolves the inventory's `#channel` and `@handle` entries through Slack. A name that resolves to
 * nothing, or a workspace Slack would not list, is a ConfigError naming it: at start the bot exits
 * with it, on a reload the edit is refused and the last good inventory stays.
 */
export function namesResolver(lookup: NameLookup, where: string, names: InventoryNames, logger: Logger) {
  return async (inventory: Inventory): Promise<Inventory> => {
    let result: Awaited<ReturnType<typeof resolveInventoryNames>>;
    try {
      result = await resolveInventoryNames(inventory, lookup, where);
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      const code = (error as { data?: { error?: unknown } }).data?.error;
      throw new ConfigError(where, [
        `the inventory names channels or people (#… or @…), and Slack did not list the workspace's names (${typeof code === 'string' ? code : (error as Error).message}): grant the app manifest's scopes (channels:read, groups:read, users:read, usergroups:read) and reinstall, or give ids instead`,
      ]);
    }
    names.current = result.resolved;
    if (result.resolved.length > 0) {
      logger.info({ names: Object.fromEntries(result.resolved.map((r) => [r.name, r.id])) }, 'resolved the inventory names through Slack');
    }
    return result.inventory;
  };
}
