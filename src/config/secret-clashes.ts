import type { Inventory } from './inventory.ts';

/** A version as the bot reads and prints one (`v1.11.6`, `1.34`, `v1.12.0-beta.1`). */
const VERSION = /^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.-]+)?$/;

/** Every string and number of the inventory, whatever its key: names, addresses, channels, paths, people, versions. */
function inventoryValues(value: unknown, into: Set<string>): Set<string> {
  if (typeof value === 'string' || typeof value === 'number') into.add(String(value));
  else if (Array.isArray(value)) for (const item of value) inventoryValues(item, into);
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      // Record keys are values too: a cluster's name is its key.
      into.add(key);
      inventoryValues(item, into);
    }
  }
  return into;
}

/**
 * The secrets that would blank out what the bot must show: a secret equal to a cluster name, a
 * version or another value of the inventory would be erased from every message and log line
 * that names it. Each problem names the variable, never its value.
 */
export function secretClashes(secrets: readonly (readonly [name: string, value: string])[], inventory: Inventory): string[] {
  const values = inventoryValues(inventory.clusters, new Set());
  const problems: string[] = [];
  for (const [name, raw] of secrets) {
    const value = raw.trim();
    if (value === '') continue;
    if (VERSION.test(value)) {
      problems.push(
        `${name}: its value is a version, and would be blanked out wherever that version is shown; is it a setting rather than a secret? Rename it so its name does not say TOKEN, SECRET, PASSWORD, KEY…, or give it a real secret`,
      );
    } else if (values.has(value)) {
      problems.push(
        `${name}: its value equals a value of the cluster inventory (a cluster name, a node, a channel…), which would be blanked out wherever it is shown: rename the variable so its name does not say TOKEN, SECRET, PASSWORD, KEY…, or give it a real secret`,
      );
    }
  }
  return problems;
}
