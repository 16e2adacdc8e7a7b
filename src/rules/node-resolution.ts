import { isIP } from 'node:net';
import { allNodes, declaredNodes, type ClusterConfig } from '../config/inventory.ts';
import { nodeLabel, nodeName } from '../config/node-names.ts';
import { plainTime } from '../time/plain-time.ts';
import { roughDuration } from '../time/rough-duration.ts';

/** The nodes of a cluster as the last job that reached it saw them (see src/ops/observed-estate.ts). */
export interface LastLook {
  controlPlanes: string[];
  workers: string[];
  /** The names the cluster itself gives them (a Kubernetes Node's, else an etcd member's), by address. */
  nodeNames: Record<string, string>;
  observedAt: string;
}

/** Which source turned a node's name into its address; the preflight checks the name against what it sees. */
export interface NamedNode {
  name: string;
  by: 'inventory' | 'last-look';
  /** For `last-look`: when the cluster was looked at. */
  seenAt?: string;
}

export type NodeResolution =
  | {
      ok: true;
      address: string;
      /** Set when the node was named, not given by its address. */
      named?: NamedNode;
      /** What the command's answer says about how the name was resolved. */
      said?: string;
    }
  | { ok: false; reason: string };

/** `talos-prd-cp-2 (10.0.30.12), …` of a last look, control planes first. */
function lookedNodes(look: LastLook): string {
  const nodes = [...look.controlPlanes, ...look.workers];
  if (nodes.length === 0) return 'none';
  return nodes.map((a) => (look.nodeNames[a] === undefined ? a : `${look.nodeNames[a]} (${a})`)).join(', ');
}

/** `3 min ago` (`under a minute ago`), from the clock the caller reads. */
function ago(at: string, now: Date): string {
  return `${roughDuration(now.getTime() - Date.parse(at))} ago`;
}

/**
 * The address of the node a command names: by its address, by the inventory's `nodeNames`, or by
 * a name the last look at the cluster saw. A name is a claim about the cluster at some moment, so
 * its source travels with the address (the preflight looks again and refuses when the address no
 * longer has that name). Anything else is refused with the nodes listed, name and address.
 */
export function resolveNode(cluster: ClusterConfig, token: string, look: LastLook | undefined, now: Date): NodeResolution {
  const declared = declaredNodes(cluster);
  const lists = declared.controlPlanes !== undefined || declared.workers !== undefined;
  const nodes = allNodes(cluster);
  const known = (address: string): boolean => !lists || nodes.includes(address);
  if (isIP(token) !== 0 && known(token)) return { ok: true, address: token };

  const inInventory = Object.entries(declared.nodeNames ?? {}).find(([, name]) => name === token)?.[0];
  const inLook = look === undefined ? undefined : Object.entries(look.nodeNames).find(([, name]) => name === token)?.[0];
  if (inInventory !== undefined && inLook !== undefined && inInventory !== inLook) {
    return {
      ok: false,
      reason: `${token} is ${inInventory} in the inventory's \`nodeNames\`, but the last look at *${cluster.name}* (${ago(look!.observedAt, now)}) saw it at ${inLook}: give the node's address, and correct \`nodeNames\` or leave it out.`,
    };
  }
  if (inInventory !== undefined && known(inInventory)) return { ok: true, address: inInventory, named: { name: token, by: 'inventory' } };
  if (inLook !== undefined && known(inLook)) {
    return {
      ok: true,
      address: inLook,
      named: { name: token, by: 'last-look', seenAt: look!.observedAt },
      said: `${token} is ${inLook} as of the last look at the cluster, ${ago(look!.observedAt, now)}; the preflight looks again and refuses if that changed.`,
    };
  }

  if (lists) {
    const listed = nodes.map((a) => nodeLabel(cluster, a)).join(', ');
    return { ok: false, reason: `${token} is not a node of *${cluster.name}*. Its nodes: ${listed}.` };
  }
  if (look === undefined) {
    return {
      ok: false,
      reason: `${token} is no node name *${cluster.name}*'s inventory gives, and the bot has not looked at the cluster yet, so it knows no other: run \`/talos health\` first (it finds every node), then name the node again, or give the node's IP address.`,
    };
  }
  return {
    ok: false,
    reason: `No node of *${cluster.name}* is named ${token}. Its nodes at the last look, ${ago(look.observedAt, now)}: ${lookedNodes(look)}. Name one of them or give its IP address; \`/talos health\` looks again.`,
  };
}

/**
 * The preflight's own look against the name the command resolved: the address must still carry
 * that name, or nothing is planned. A name from the inventory is checked only when the cluster
 * names the address at all (a failed node may have left Kubernetes and etcd).
 */
export function namedNodeCheck(
  cluster: Pick<ClusterConfig, 'name'>,
  address: string,
  named: NamedNode,
  seen: Record<string, string>,
): { refusal: string; note?: undefined } | { refusal?: undefined; note?: string } {
  const now = seen[address];
  if (now === named.name) {
    return named.by === 'last-look'
      ? {
          note: `${named.name} is ${address}: the last look at the cluster (${plainTime(named.seenAt ?? '')}) said so, and this preflight's own look confirms it.`,
        }
      : {};
  }
  if (now === undefined && named.by === 'inventory') return {};
  const source =
    named.by === 'inventory' ? "the inventory's `nodeNames`" : `the last look at the cluster (${plainTime(named.seenAt ?? '')})`;
  const elsewhere = Object.entries(seen).find(([, name]) => name === named.name)?.[0];
  const today = now === undefined ? `no source names ${address} now` : `${address} is ${now} now`;
  return {
    refusal: `${named.name} was ${address} by ${source}, but ${today}${elsewhere === undefined ? '' : ` and ${named.name} is ${elsewhere}`}, so nothing was planned: see the nodes as they are with \`/talos health\`, then name the node again or give its address.`,
  };
}

/** `talos-prd-cp-2 (10.0.30.12)` with the names the last look saw, for a cluster whose inventory names none. */
export function lookLabel(cluster: ClusterConfig, look: LastLook | undefined, address: string): string {
  const name = nodeName(cluster, address) ?? look?.nodeNames[address];
  return name === undefined ? address : `${name} (${address})`;
}
