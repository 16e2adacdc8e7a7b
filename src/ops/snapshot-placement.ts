import { isIP } from 'node:net';
import type { V1Node } from '@kubernetes/client-node';
import { placementUnknown, type BotPlacement } from '../config/bot-placement.ts';
import { allNodes, type ClusterConfig } from '../config/inventory.ts';
import { OpsError } from '../errors.ts';
import type { KubeApi } from '../kube/kube-api.ts';
import { botOnCluster, type BotOnCluster, type ClusterNode, type PlacementEvidence } from '../rules/bot-on-cluster.ts';

/** What an etcd snapshot needs to know it is taken off the cluster: where the bot runs, and the cluster's Nodes. */
export interface SnapshotHost {
  placement: BotPlacement;
  kube: Pick<KubeApi, 'listNodes'>;
}

/** Each Node's name and the IP addresses it reports (InternalIP, ExternalIP; a `Hostname` entry is no address). */
export function clusterNodes(nodes: readonly V1Node[]): ClusterNode[] {
  return nodes.flatMap((n) =>
    n.metadata?.name === undefined
      ? []
      : [{ name: n.metadata.name, addresses: (n.status?.addresses ?? []).map((a) => a.address).filter((a) => isIP(a) !== 0) }],
  );
}

/** Whether the bot runs on the cluster, and whether its Nodes could be read for the answer. */
export interface PlacementObservation {
  onCluster: BotOnCluster;
  /** Why the Kubernetes Nodes were not compared (the API did not answer); undefined when they were. */
  nodesUnread?: string;
}

/**
 * Looks where the bot runs against the cluster: its Kubernetes Nodes, and every node address the
 * cluster (the session's, so the observed one) has. When the Nodes cannot be read, the addresses
 * alone decide: the manifests always set the host IP, and a cluster whose API does not answer may
 * need its snapshot most.
 */
export async function observeBotPlacement(cluster: ClusterConfig, host: SnapshotHost, signal: AbortSignal): Promise<PlacementObservation> {
  if (placementUnknown(host.placement)) return { onCluster: { verdict: 'unknown' } };
  let nodes: ClusterNode[] = [];
  let nodesUnread: string | undefined;
  try {
    nodes = clusterNodes(await host.kube.listNodes(signal));
  } catch (error) {
    if (signal.aborted) throw error;
    nodesUnread = error instanceof Error ? error.message : String(error);
  }
  const onCluster = botOnCluster(host.placement, nodes, allNodes(cluster));
  return nodesUnread === undefined ? { onCluster } : { onCluster, nodesUnread };
}

const VARIABLE: Record<PlacementEvidence, string> = { 'node name': 'BOT_NODE_NAME', 'host IP': 'BOT_HOST_IP', 'pod IP': 'BOT_POD_IP' };

/** `the bot runs on talos-prd-w-1, a node of production (BOT_NODE_NAME talos-prd-w-1)`. */
export function botOnClusterText(cluster: string, on: Extract<BotOnCluster, { verdict: 'on' }>): string {
  return `the bot runs on ${on.node}, a node of ${cluster} (${VARIABLE[on.evidence]} ${on.value})`;
}

/** Why a snapshot is not taken, and what to do: the same words in a refusal, a stop and the scheduled snapshot's reply. */
export function snapshotOnClusterError(cluster: string, on: Extract<BotOnCluster, { verdict: 'on' }>): OpsError {
  return new OpsError(
    'snapshot-on-cluster',
    `${botOnClusterText(cluster, on)}: an etcd snapshot it took would stay on the cluster it is meant to rescue, so it takes none, and nothing that needs one starts`,
    {
      hint: `run the bot outside ${cluster}, on a management cluster or host (docs/deploy.md, "Where to run it"); another snapshotDir is not enough, since the bot, its Redis and its records go down with ${cluster} and its upgrades drain the bot's own node`,
    },
  );
}

/**
 * Throws `snapshot-on-cluster` when the bot runs on the cluster: every etcd snapshot, of an
 * operation or of the schedule, goes through here first (see `takeEtcdSnapshot`).
 */
export async function refuseSnapshotOnCluster(cluster: ClusterConfig, host: SnapshotHost, signal: AbortSignal): Promise<void> {
  const { onCluster } = await observeBotPlacement(cluster, host, signal);
  if (onCluster.verdict === 'on') throw snapshotOnClusterError(cluster.name, onCluster);
}
