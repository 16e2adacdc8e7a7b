import type { ClusterConfig } from './inventory.ts';

/** The node's name from the inventory's `nodeNames`, if it has one. */
export function nodeName(cluster: ClusterConfig, address: string): string | undefined {
  return cluster.nodeNames?.[address];
}

/** `talos-prd-cp-2 (10.0.30.12)`, or the address alone for a node without a name. */
export function nodeLabel(cluster: ClusterConfig, address: string): string {
  const name = nodeName(cluster, address);
  return name === undefined ? address : `${name} (${address})`;
}
