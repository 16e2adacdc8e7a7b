import { isIP } from 'node:net';
import { declaredNodes, type ClusterConfig } from './inventory.ts';

/** A node that joined a cluster outside the inventory: its address, role and, when known, its name. */
export interface JoinedNode {
  address: string;
  role: 'controlplane' | 'worker';
  name?: string | undefined;
}

/**
 * The exact inventory lines that add `joined` to `cluster`: its node lists as they must read
 * afterwards, under the cluster's key, with each new node named in a comment. Only addresses
 * are written (what the inventory holds); anything that is not one is left for a person. Only the
 * lists the file declares are written: a cluster without node lists needs no line.
 */
export function inventoryLinesFor(cluster: ClusterConfig, joined: readonly JoinedNode[]): string[] {
  const declared = declaredNodes(cluster);
  const listed = [...(declared.controlPlanes ?? []), ...(declared.workers ?? [])];
  const fresh = joined.filter((j) => isIP(j.address) !== 0 && !listed.includes(j.address));
  const lines = ['clusters:', `  ${cluster.name}:`];
  for (const [key, role, current] of [
    ['controlPlanes', 'controlplane', declared.controlPlanes],
    ['workers', 'worker', declared.workers],
  ] as const) {
    const added = fresh.filter((j) => j.role === role);
    if (added.length === 0 || current === undefined) continue;
    const names = added.map((j) => (j.name === undefined ? j.address : `${j.name} (${j.address})`)).join(', ');
    lines.push(`    ${key}: [${[...current, ...added.map((j) => j.address)].join(', ')}]   # added: ${names}`);
  }
  return lines.length > 2 ? lines : [];
}
