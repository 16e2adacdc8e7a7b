import { isIP } from 'node:net';
import { allNodes, declaredNodes, type ClusterConfig } from './inventory.ts';

/** The node's name from the inventory's `nodeNames`, if it has one. */
export function nodeName(cluster: ClusterConfig, address: string): string | undefined {
  return cluster.nodeNames?.[address];
}

/** `talos-prd-cp-2 (10.0.30.12)`, or the address alone for a node without a name. */
export function nodeLabel(cluster: ClusterConfig, address: string): string {
  const name = nodeName(cluster, address);
  return name === undefined ? address : `${name} (${address})`;
}

export type NodeResolution = { ok: true; address: string } | { ok: false; reason: string };

/**
 * The address of the node a command names, by its address or its inventory name. Anything else
 * is refused with every node of the cluster listed, name and address, so the next try is right.
 */
export function resolveNode(cluster: ClusterConfig, token: string): NodeResolution {
  const nodes = allNodes(cluster);
  if (nodes.includes(token)) return { ok: true, address: token };
  const byName = nodes.find((address) => nodeName(cluster, address) === token);
  if (byName !== undefined) return { ok: true, address: byName };
  const declared = declaredNodes(cluster);
  if (declared.controlPlanes === undefined && declared.workers === undefined) {
    // No node lists: the nodes are known only once the cluster is observed, and the preflight checks the address then.
    const named = Object.entries(declared.nodeNames ?? {}).find(([, name]) => name === token)?.[0];
    if (named !== undefined) return { ok: true, address: named };
    if (isIP(token) !== 0) return { ok: true, address: token };
    return {
      ok: false,
      reason: `${token} is not a node address of *${cluster.name}*, and its inventory names no node so: give the node's IP address (\`/talos health\` lists every node).`,
    };
  }
  return {
    ok: false,
    reason: `${token} is not a node of *${cluster.name}*. Its nodes: ${nodes.map((a) => nodeLabel(cluster, a)).join(', ')}.`,
  };
}
