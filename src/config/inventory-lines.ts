import { isIP } from 'node:net';
import type { ClusterConfig } from './inventory.ts';

/** A node that joined a cluster outside the inventory: its address, role and, when known, its name. */
export interface JoinedNode {
  address: string;
  role: 'controlplane' | 'worker';
  name?: string | undefined;
}

/**
 * The exact inventory lines that add `joined` to `cluster`: its node lists as they must read
 * afterwards, under the cluster's key, with each new node named in a comment. Only addresses
 * are written (what the inventory holds); anything that is not one is left for a person.
 */
export function inventoryLinesFor(cluster: ClusterConfig, joined: readonly JoinedNode[]): string[] {
  const fresh = joined.filter(
    (j) => isIP(j.address) !== 0 && !cluster.controlPlanes.includes(j.address) && !cluster.workers.includes(j.address),
  );
  if (fresh.length === 0) return [];
  const lines = ['clusters:', `  ${cluster.name}:`];
  for (const [key, role, current] of [
    ['controlPlanes', 'controlplane', cluster.controlPlanes],
    ['workers', 'worker', cluster.workers],
  ] as const) {
    const added = fresh.filter((j) => j.role === role);
    if (added.length === 0) continue;
    const names = added.map((j) => (j.name === undefined ? j.address : `${j.name} (${j.address})`)).join(', ');
    lines.push(`    ${key}: [${[...current, ...added.map((j) => j.address)].join(', ')}]   # added: ${names}`);
  }
  return lines;
}
