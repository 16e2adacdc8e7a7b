/**
 * Builds a cluster from its shape and derives what each API observes from the lifecycle state
 * plus the injected faults. Every reader goes through these functions so that talosctl, the
 * Kubernetes API and `talosctl health` can never disagree about a node.
 */
import { createHash, randomUUID } from 'node:crypto';
import { seedKube } from './kube-seed.ts';
import { schematicId } from './schematics.ts';
import { assignIds, desiredResources, inputsFromShape } from './terraform-resources.ts';
import type { ClusterShape, NodeShape, SimCluster, SimNode, SimTiming } from './types.ts';
import type { ClusterCredentials } from './credentials.ts';

export interface BuildClusterInput {
  shape: ClusterShape;
  terraformDir: string;
  snapshotDir: string;
  kubeApiPort: number;
  credentials: ClusterCredentials;
  now: number;
}

/** etcd member ids are random; derived here so runs repeat. `incarnation` tells a rejoined machine from its predecessor. */
export function memberIdFor(cluster: string, hostname: string, incarnation = 0): string {
  return createHash('sha256')
    .update(`${cluster}/${hostname}/etcd${incarnation === 0 ? '' : `/${incarnation}`}`)
    .digest('hex')
    .slice(0, 16);
}

export interface BuildNodeInput {
  cluster: string;
  node: NodeShape;
  /** Runs the Longhorn node class. */
  longhorn: boolean;
  talosVersion: string;
  kubernetesVersion: string;
  schematic: string;
  platform: string;
  bootedAt: number;
  lastUpAt: number;
}

/** A machine that is up and a member of everything its role joins, as the fleet is at start. */
export function buildNode(input: BuildNodeInput): SimNode {
  const { node: n } = input;
  return {
    hostname: n.hostname,
    address: n.address,
    role: n.role,
    host: n.host,
    longhorn: input.longhorn,
    talosVersion: input.talosVersion,
    schematic: input.schematic,
    platform: input.platform,
    kubeletVersion: input.kubernetesVersion,
    ...(n.role === 'controlplane'
      ? {
          components: {
            apiserver: input.kubernetesVersion,
            controllerManager: input.kubernetesVersion,
            scheduler: input.kubernetesVersion,
          },
          etcdMemberId: memberIdFor(input.cluster, n.hostname),
        }
      : {}),
    stage: 'running',
    bootId: randomUUID(),
    bootedAt: input.bootedAt,
    etcdMember: n.role === 'controlplane',
    discoveryMember: true,
    k8sRegistered: true,
    cordoned: false,
    cordonedByTalos: false,
    kubeletNotReady: false,
    servicesStopped: false,
    events: [],
    lastUpAt: input.lastUpAt,
    memoryMiB: n.role === 'controlplane' ? 16_384 : 8_192,
    diskBytes: 107_374_182_400,
  };
}

export function buildCluster(input: BuildClusterInput): SimCluster {
  const { shape, now } = input;
  const platform = shape.installerPlatform ?? 'nocloud';
  const defaultSchematic = schematicId(shape.defaultExtensions);
  const longhornSchematic = shape.longhorn ? schematicId(shape.longhornExtensions ?? []) : undefined;
  // Machines booted a while ago, at slightly different times, like a real fleet.
  const nodes: SimNode[] = shape.nodes.map((n, i) => {
    const longhorn = shape.longhorn && (n.longhorn ?? false);
    return buildNode({
      cluster: shape.name,
      node: n,
      longhorn,
      talosVersion: shape.talosVersion,
      kubernetesVersion: shape.kubernetesVersion,
      // The schematic follows the installer the node was built from, not whether it stores Longhorn data.
      schematic: n.installer === 'longhorn' && longhornSchematic ? longhornSchematic : defaultSchematic,
      platform,
      bootedAt: now - (3 * 86_400_000 + i * 317_000),
      lastUpAt: now - 3 * 86_400_000,
    });
  });
  // The state was last applied from exactly these inputs, so a first plan finds no changes.
  const applied = inputsFromShape(shape);
  const resources = desiredResources(shape.name, applied, defaultSchematic);
  assignIds(resources, {}, { machineSecrets: input.credentials.machineSecrets, kubeconfig: input.credentials.kubeconfig });
  const firstCp = nodes.find((n) => n.role === 'controlplane');
  return {
    name: shape.name,
    environment: shape.environment,
    shape,
    nodes,
    ...(shape.vip ? { vip: shape.vip } : {}),
    endpoints: [...shape.endpoints],
    kubernetesEndpoint: shape.kubernetesEndpoint,
    terraformDir: input.terraformDir,
    snapshotDir: input.snapshotDir,
    terraform: {
      talosVersion: shape.talosVersion,
      kubernetesVersion: shape.kubernetesVersion,
      defaultSchematic,
      ...(longhornSchematic ? { longhornSchematic } : {}),
      installerPlatform: platform,
      applied,
      state: { lineage: randomUUID(), serial: 4, resources },
    },
    etcd: {
      ...(firstCp?.etcdMemberId ? { leaderId: firstCp.etcdMemberId } : {}),
      raftTerm: 4,
      raftIndexBase: 1_843_211,
      revisionBase: 1_520_377,
      totalKeys: 1287,
      dbSizeBytes: 21_037_056,
      dbInUseBytes: 6_117_376,
    },
    kube: seedKube(shape, nodes, now - 30 * 86_400_000),
    credentials: input.credentials,
    kubeApiPort: input.kubeApiPort,
    createdAt: now - 30 * 86_400_000,
    faults: {},
  };
}

export function findNode(cluster: SimCluster, ref: string): SimNode | undefined {
  return cluster.nodes.find((n) => n.address === ref || n.hostname === ref);
}

/** Whether a fault list names this node (by address or hostname). */
export function named(list: readonly string[] | Record<string, unknown> | undefined, node: SimNode): boolean {
  if (!list) return false;
  const keys = Array.isArray(list) ? list : Object.keys(list);
  return keys.includes(node.address) || keys.includes(node.hostname);
}

export function namedValue<T>(map: Record<string, T> | undefined, node: SimNode): T | undefined {
  if (!map) return undefined;
  return map[node.address] ?? map[node.hostname] ?? map['*'];
}

export function controlPlanes(cluster: SimCluster): SimNode[] {
  return cluster.nodes.filter((n) => n.role === 'controlplane');
}

export function isPartitioned(cluster: SimCluster, node: SimNode): boolean {
  return named(cluster.faults.nodeUnreachable, node);
}

/** The machine is powered on and its OS is up (whatever the network says). */
export function isBooted(node: SimNode): boolean {
  return node.stage === 'running' || node.stage === 'booting' || node.stage === 'upgrading' || node.stage === 'resetting';
}

/** apid answers authenticated calls. */
export function apidReachable(cluster: SimCluster, node: SimNode): boolean {
  return isBooted(node) && !isPartitioned(cluster, node);
}

/**
 * A machine in maintenance mode serves the API on :50000 with a certificate of its own maintenance
 * root, skips client certificates and grants only the reader role (siderolabs/talos v1.13.9
 * internal/app/machined/pkg/controllers/runtime/api_service_config.go, `MaintenanceServiceConfig`:
 * ReadonlyRoleMode, NodeRoutingDisabled, SkipVerifyingClientCert; controllers/secrets/maintenance_root.go).
 * A client or a proxying apid that verifies the server against the cluster's CA fails the handshake.
 */
export const MAINTENANCE_HANDSHAKE_ERROR =
  'rpc error: code = Unavailable desc = connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"';

/** gRPC Unavailable text for a node apid cannot reach, as the proxying endpoint reports it. */
export function unavailableError(cluster: SimCluster, node: SimNode | undefined, address: string): string {
  if (node?.stage === 'maintenance' && !isPartitioned(cluster, node)) return MAINTENANCE_HANDSHAKE_ERROR;
  const reason = node && node.stage === 'rebooting' && !isPartitioned(cluster, node) ? 'connection refused' : 'no route to host';
  return `rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp ${address}:50000: connect: ${reason}"`;
}

/** Milliseconds since this boot, used to walk services through their start-up states. */
function uptime(node: SimNode, now: number): number {
  return now - node.bootedAt;
}

export interface ServiceStatus {
  state: 'Running' | 'Preparing' | 'Waiting' | 'Failed' | 'Finished' | 'Stopping';
  health: 'OK' | 'Fail' | '?';
  lastHealthMessage?: string;
}

/** The etcd service as machined reports it; undefined where etcd is not registered (workers). */
export function etcdService(cluster: SimCluster, node: SimNode, now: number, timing: SimTiming): ServiceStatus | undefined {
  if (node.role !== 'controlplane') return undefined;
  if (node.servicesStopped) return { state: 'Finished', health: '?' };
  // A failed PreFunc ends the service run; nothing restarts it (system.go v1.13.9).
  if (node.etcdFailed !== undefined) return { state: 'Failed', health: '?' };
  // The join loop runs inside PreFunc, so the service stays Preparing with no health check yet.
  if (node.etcdWaitingJoin || node.etcdRestoring) return { state: 'Preparing', health: '?' };
  // A new control plane waiting to join (services/etcd.go v1.13.9: buildInitialCluster runs in the pre state) is Preparing.
  if (!node.etcdMember && node.stage === 'booting') return { state: 'Preparing', health: '?' };
  if (node.etcdRemoved)
    return { state: 'Failed', health: 'Fail', lastHealthMessage: 'the member has been permanently removed from the cluster' };
  if (!node.etcdMember) return { state: 'Finished', health: '?' };
  if (node.stage === 'booting' && uptime(node, now) < timing.bootMs / 2) return { state: 'Preparing', health: '?' };
  const unhealthy = namedValue(cluster.faults.etcdUnhealthy, node);
  if (unhealthy) return { state: unhealthy, health: 'Fail', lastHealthMessage: 'context deadline exceeded' };
  if (cluster.faults.etcdNoLeader || !hasQuorum(cluster)) {
    return { state: 'Running', health: 'Fail', lastHealthMessage: 'context deadline exceeded' };
  }
  return { state: 'Running', health: 'OK' };
}

/** The kubelet service as machined reports it. */
export function kubeletService(node: SimNode, now: number, timing: SimTiming): ServiceStatus {
  if (node.servicesStopped) return { state: 'Finished', health: '?' };
  if (node.stage === 'booting' && uptime(node, now) < timing.bootMs / 2) return { state: 'Waiting', health: '?' };
  return { state: 'Running', health: 'OK' };
}

/** etcd on this member serves and peers can reach it. */
export function etcdMemberHealthy(cluster: SimCluster, node: SimNode): boolean {
  if (node.role !== 'controlplane' || !node.etcdMember || node.servicesStopped) return false;
  // A wiped member waiting to rejoin, or one whose etcd failed, is listed but serves nothing.
  if (node.etcdWaitingJoin || node.etcdRestoring || node.etcdFailed !== undefined) return false;
  if (!apidReachable(cluster, node)) return false;
  const unhealthy = namedValue(cluster.faults.etcdUnhealthy, node);
  return unhealthy === undefined;
}

/**
 * The etcd member list: each control plane's member, preceded by the stale member of its previous
 * incarnation when Terraform recreated the VM and nobody removed that member yet.
 */
export function etcdMembers(cluster: SimCluster): SimNode[] {
  return cluster.nodes.flatMap((n) => [
    ...(n.staleMember ? [n.staleMember] : []),
    ...(n.role === 'controlplane' && n.etcdMember ? [n] : []),
  ]);
}

/** Members that vote: a learner is not counted in quorum and cannot lead (reference/tofu-facts.md, Talos etcd learners). */
export function etcdVoters(cluster: SimCluster): SimNode[] {
  return etcdMembers(cluster).filter((n) => !n.etcdLearner);
}

/** A majority of voting members is up: the cluster can elect a leader and serve writes. */
export function hasQuorum(cluster: SimCluster): boolean {
  const members = etcdVoters(cluster);
  const healthy = members.filter((m) => etcdMemberHealthy(cluster, m)).length;
  return members.length > 0 && healthy > members.length / 2;
}

/** Re-elects a leader when the current one is gone, bumping the raft term like a real election. */
export function electedLeader(cluster: SimCluster): string | undefined {
  if (!hasQuorum(cluster)) return undefined;
  const members = etcdVoters(cluster);
  const current = members.find((m) => m.etcdMemberId === cluster.etcd.leaderId);
  if (current && etcdMemberHealthy(cluster, current)) return current.etcdMemberId;
  const next = members.find((m) => etcdMemberHealthy(cluster, m));
  if (next?.etcdMemberId) {
    cluster.etcd.leaderId = next.etcdMemberId;
    cluster.etcd.raftTerm += 1;
  }
  return next?.etcdMemberId;
}

/** The leader as one member sees it, faults included. */
export function leaderSeenBy(cluster: SimCluster, node: SimNode): string | undefined {
  if (cluster.faults.etcdNoLeader) return undefined;
  if (named(cluster.faults.etcdLeaderDisagreement, node)) return node.etcdMemberId;
  return electedLeader(cluster);
}

/** The store's current revision, as a snapshot taken now records it. */
export function currentRevision(cluster: SimCluster): number {
  return cluster.etcd.revisionBase + Math.floor((Date.now() - cluster.createdAt) / 5000);
}

export function raftIndex(cluster: SimCluster, now: number): number {
  // Grows steadily with time, as a busy cluster's log does.
  return cluster.etcd.raftIndexBase + Math.floor((now - cluster.createdAt) / 2000);
}

export type ReadyStatus = 'True' | 'False' | 'Unknown';

/** The Node's Ready condition as the node lifecycle controller would set it. */
export function nodeReady(cluster: SimCluster, node: SimNode): ReadyStatus {
  if (!isBooted(node) || isPartitioned(cluster, node)) return 'Unknown';
  if (node.servicesStopped) return 'Unknown';
  if (node.stage === 'booting') return 'False';
  if (node.kubeletNotReady || named(cluster.faults.nodeNotReady, node)) return 'False';
  return 'True';
}

export function isCordoned(cluster: SimCluster, node: SimNode): boolean {
  return node.cordoned || named(cluster.faults.nodeCordoned, node);
}

/** A control plane's kube-apiserver is serving. */
export function apiserverServing(cluster: SimCluster, node: SimNode): boolean {
  return node.role === 'controlplane' && apidReachable(cluster, node) && !node.servicesStopped && node.stage !== 'booting';
}

/** What a client of the Kubernetes endpoint experiences. */
export function kubeApiAvailability(cluster: SimCluster): 'up' | 'down' | 'no-quorum' {
  if (!controlPlanes(cluster).some((n) => apiserverServing(cluster, n))) return 'down';
  return hasQuorum(cluster) ? 'up' : 'no-quorum';
}

/** The virtual IP answers only while a control plane holds it, which needs etcd quorum. */
export function vipHolder(cluster: SimCluster): SimNode | undefined {
  if (!hasQuorum(cluster)) return undefined;
  return controlPlanes(cluster).find((n) => apidReachable(cluster, n) && !n.servicesStopped);
}
