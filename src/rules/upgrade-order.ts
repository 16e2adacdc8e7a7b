/** A node of the inventory, as the upgrade order needs it. */
export interface OrderableNode {
  address: string;
  role: 'controlplane' | 'worker';
  name?: string;
}

/**
 * The runbook's rolling order: workers first, then control planes, one at a time; each group
 * keeps inventory order so the plan is the same every time it is computed.
 *
 * @throws {Error} when an address appears twice (the node would be upgraded twice)
 */
export function upgradeOrder<T extends OrderableNode>(nodes: readonly T[]): T[] {
  const seen = new Set<string>();
  for (const node of nodes) {
    if (seen.has(node.address)) throw new Error(`${node.address} appears twice in the inventory: each node is upgraded once`);
    seen.add(node.address);
  }
  return [...nodes.filter((n) => n.role === 'worker'), ...nodes.filter((n) => n.role === 'controlplane')];
}
