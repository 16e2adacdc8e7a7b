import { BlockList, isIP } from 'node:net';
import { placementUnknown, type BotPlacement } from '../config/bot-placement.ts';

/** A Kubernetes Node of a cluster: its name and the IP addresses in its `status.addresses`. */
export interface ClusterNode {
  name: string;
  addresses: readonly string[];
}

/** Which of the bot's own facts put it on the cluster. */
export type PlacementEvidence = 'node name' | 'host IP' | 'pod IP';

export type BotOnCluster =
  /** The deployment says nothing about where the bot runs. */
  | { verdict: 'unknown' }
  | { verdict: 'off' }
  /** `node`: the Node's name, or the address when only an address matched a node no Node names. */
  | { verdict: 'on'; node: string; evidence: PlacementEvidence; value: string };

/** Whether `ip` equals one of `addresses`, compared as addresses (`fd00::1` is `fd00:0:0::1`). */
function sameAddress(ip: string, addresses: readonly string[]): string | undefined {
  const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
  const list = new BlockList();
  list.addAddress(ip, family);
  return addresses.find((a) => isIP(a) !== 0 && (isIP(a) === 6 ? 'ipv6' : 'ipv4') === family && list.check(a, family));
}

/**
 * Whether the bot runs on the cluster whose Kubernetes Nodes are `nodes` and whose nodes have the
 * addresses `addresses` (what the talosconfig, etcd and the inventory say). On it when its node
 * name is one of the Nodes, or its host IP (or its pod IP: a pod on the host network has its node's
 * address) is one of the nodes' addresses. Pod IPs are never compared with the cluster's pods:
 * Talos gives every cluster the same pod subnet by default, so they prove nothing.
 */
export function botOnCluster(placement: BotPlacement, nodes: readonly ClusterNode[], addresses: readonly string[]): BotOnCluster {
  if (placementUnknown(placement)) return { verdict: 'unknown' };
  const { nodeName, hostIp, podIp } = placement;
  if (nodeName !== undefined) {
    const named = nodes.find((n) => n.name === nodeName);
    if (named !== undefined) return { verdict: 'on', node: named.name, evidence: 'node name', value: nodeName };
  }
  for (const [evidence, ip] of [
    ['host IP', hostIp],
    ['pod IP', podIp],
  ] as const) {
    if (ip === undefined) continue;
    const node = nodes.find((n) => sameAddress(ip, n.addresses) !== undefined);
    if (node !== undefined) return { verdict: 'on', node: node.name, evidence, value: ip };
    const address = sameAddress(ip, addresses);
    if (address !== undefined) return { verdict: 'on', node: address, evidence, value: ip };
  }
  return { verdict: 'off' };
}
