/**
 * What longhorn-manager does in the simulated clusters: replica health per node, volume
 * robustness, and its instance-manager budgets, which it deletes during a drain when its
 * node-drain policy allows and recreates once the node is schedulable again. Sources are named
 * in reference/cluster-facts.md (Longhorn).
 */
import { isCordoned, named, nodeReady } from './cluster-model.ts';
import { instanceManagerPdb, instanceManagerPodFields } from './kube-seed.ts';
import type { Recorder } from './recorder.ts';
import type { PodState, SimCluster, SimNode, SimState, SimTiming, VolumeState } from './types.ts';

export const DEFAULT_DRAIN_POLICY = 'block-if-contains-last-replica';

export interface ReplicaView {
  /** Hostname of the node holding the replica (Longhorn's `spec.nodeID`). */
  nodeID: string;
  /** When it last became healthy; empty while it rebuilds (or was never started). */
  healthyAt: number | undefined;
  /** When it failed; undefined while it is not failed. */
  failedAt: number | undefined;
  desireState: 'running' | 'stopped';
  currentState: 'running' | 'stopped' | 'error';
}

function byHostname(cluster: SimCluster, hostname: string): SimNode | undefined {
  return cluster.nodes.find((n) => n.hostname === hostname);
}

function hasIscsi(state: SimState, node: SimNode): boolean {
  return (state.schematics[node.schematic] ?? []).includes('siderolabs/iscsi-tools');
}

/** The progress a test holds the rebuild of `node`'s replicas at (`faults.longhornRebuildHeld`), if it does. */
function heldAt(cluster: SimCluster, node: SimNode): number | undefined {
  const held = cluster.faults.longhornRebuildHeld;
  return held !== undefined && held.hostname === node.hostname && node.lastUpAt > held.since ? held.percent : undefined;
}

/**
 * One replica as Longhorn reports it: failed while its node is away (or a fault says so), rebuilding
 * for `longhornRebuildMs` after the node is back, healthy after that. A detached volume's replicas
 * are stopped and keep their health.
 */
export function replicaView(
  cluster: SimCluster,
  state: SimState,
  volume: VolumeState,
  hostname: string,
  timing: SimTiming,
  now: number,
): ReplicaView {
  const node = byHostname(cluster, hostname);
  const desireState = volume.detached ? 'stopped' : 'running';
  const failedByFault = node !== undefined && named(cluster.faults.longhornReplicaFailed?.[volume.pvcName], node);
  const since = cluster.createdAt;
  if (node === undefined || failedByFault)
    return { nodeID: hostname, healthyAt: since, failedAt: now - 60_000, desireState, currentState: 'error' };
  if (volume.detached) return { nodeID: hostname, healthyAt: since, failedAt: undefined, desireState, currentState: 'stopped' };
  if (nodeReady(cluster, node) !== 'True')
    return { nodeID: hostname, healthyAt: since, failedAt: node.failedAt ?? node.lastUpAt, desireState, currentState: 'error' };
  const rebuiltAt = node.lastUpAt + timing.longhornRebuildMs;
  if (heldAt(cluster, node) !== undefined || now < rebuiltAt || !hasIscsi(state, node))
    return { nodeID: hostname, healthyAt: undefined, failedAt: undefined, desireState, currentState: 'running' };
  return { nodeID: hostname, healthyAt: Math.max(since, rebuiltAt), failedAt: undefined, desireState, currentState: 'running' };
}

/**
 * The engine's rebuild status of one replica (longhorn-manager `RebuildStatus`, reported by the
 * engine per replica address): in progress while the replica rebuilds after its node came back,
 * its progress the share of the rebuild time gone; complete once rebuilt; none for a replica that
 * was not rebuilt since the cluster was created, or that cannot rebuild (node away, failed, detached).
 */
export function rebuildView(
  cluster: SimCluster,
  state: SimState,
  volume: VolumeState,
  hostname: string,
  timing: SimTiming,
  now: number,
): { isRebuilding: boolean; progress: number; state: 'in_progress' | 'complete' } | undefined {
  const node = byHostname(cluster, hostname);
  const replica = replicaView(cluster, state, volume, hostname, timing, now);
  if (node === undefined || replica.currentState !== 'running' || node.lastUpAt < cluster.createdAt) return undefined;
  if (replica.healthyAt !== undefined) return { isRebuilding: false, progress: 100, state: 'complete' };
  // Without iscsi-tools the engine cannot reach the replica: it stays at 0 and never completes.
  const held = heldAt(cluster, node);
  const share = held !== undefined ? held / 100 : hasIscsi(state, node) ? (now - node.lastUpAt) / timing.longhornRebuildMs : 0;
  return { isRebuilding: true, progress: Math.max(0, Math.min(99, Math.floor(share * 100))), state: 'in_progress' };
}

export function isHealthyReplica(replica: ReplicaView): boolean {
  return replica.healthyAt !== undefined && replica.failedAt === undefined;
}

/** Volume state and robustness: a detached volume is `unknown` (longhorn/longhorn#8139), not degraded. */
export function volumeView(
  cluster: SimCluster,
  state: SimState,
  volume: VolumeState,
  timing: SimTiming,
  now: number,
): { state: 'attached' | 'detached'; robustness: 'healthy' | 'degraded' | 'faulted' | 'unknown' } {
  if (volume.detached) return { state: 'detached', robustness: 'unknown' };
  if (volume.engineLostAt !== undefined) {
    const node = byHostname(cluster, volume.attachedTo);
    if (node === undefined || node.stage !== 'running' || node.lastUpAt < volume.engineLostAt)
      return { state: 'detached', robustness: 'unknown' };
  }
  const replicas = volume.replicas.map((h) => replicaView(cluster, state, volume, h, timing, now));
  const healthy = replicas.filter((r) => isHealthyReplica(r) && r.currentState === 'running').length;
  const robustness = healthy === replicas.length ? 'healthy' : healthy > 0 ? 'degraded' : 'faulted';
  return { state: 'attached', robustness };
}

/** The pod that mounts the volume's claim, if one exists. */
export function volumePod(cluster: SimCluster, volume: VolumeState): PodState | undefined {
  const name = volume.podName ?? volume.pvcName.replace(/^data-/, '');
  return cluster.kube.pods.find((p) => p.name === name && p.namespace === volume.namespace);
}

/** Where the volume's engine runs (`status.currentNodeID`): with its pod, or where it was attached by hand; nowhere when detached. */
export function attachedNode(cluster: SimCluster, volume: VolumeState): string {
  if (volume.detached) return '';
  return volumePod(cluster, volume)?.nodeName ?? volume.attachedTo;
}

export function drainPolicy(cluster: SimCluster): string {
  return cluster.faults.longhornDrainPolicy ?? cluster.kube.longhornSettings['node-drain-policy'] ?? DEFAULT_DRAIN_POLICY;
}

function hasInstanceManagerPdb(cluster: SimCluster, hostname: string): boolean {
  return cluster.kube.pdbs.some((p) => p.longhornNode === hostname);
}

/**
 * Longhorn's `canDeleteInstanceManagerPDB` for a cordoned node: `always-allow` lets go; otherwise
 * every replica on the node (running ones only, under `allow-if-replica-is-stopped`; none at all,
 * under `block-for-eviction`) needs a healthy replica of its volume on another schedulable node
 * whose instance manager is still protected by its budget. A replica that never started does not count.
 */
export function longhornAllowsDrain(
  cluster: SimCluster,
  state: SimState,
  timing: SimTiming,
  node: SimNode,
  now: number,
): { allowed: boolean; reason: string } {
  const policy = drainPolicy(cluster);
  // areAllVolumesDetachedFromNode (controller/instance_manager_controller.go, v1.10.2): an engine
  // still running on the node keeps the budget under every policy.
  const attached = cluster.kube.volumes.filter((v) => attachedNode(cluster, v) === node.hostname);
  if (attached.length > 0) return { allowed: false, reason: `some volumes are still attached: ${attached.map((v) => v.name).join(', ')}` };
  if (policy === 'always-allow') return { allowed: true, reason: policy };
  const onNode = cluster.kube.volumes.flatMap((volume) =>
    volume.replicas
      .filter((h) => h === node.hostname)
      .map(() => ({ volume, replica: replicaView(cluster, state, volume, node.hostname, timing, now) })),
  );
  if (policy === 'block-for-eviction' && onNode.length > 0)
    return { allowed: false, reason: `${policy}: ${onNode.length} replicas still on ${node.hostname}` };
  const targets =
    policy === 'allow-if-replica-is-stopped'
      ? onNode.filter(({ replica }) => replica.desireState !== 'stopped' || replica.currentState !== 'stopped')
      : onNode;
  for (const { volume, replica } of targets) {
    const elsewhere = volume.replicas
      .filter((h) => h !== node.hostname)
      .some((h) => {
        const other = byHostname(cluster, h);
        return (
          other !== undefined &&
          !isCordoned(cluster, other) &&
          hasInstanceManagerPdb(cluster, h) &&
          isHealthyReplica(replicaView(cluster, state, volume, h, timing, now))
        );
      });
    const neverStarted = replica.healthyAt === undefined && replica.failedAt === undefined;
    if (!elsewhere && !neverStarted)
      return { allowed: false, reason: `${policy}: ${node.hostname} holds the last healthy replica of ${volume.name}` };
  }
  return { allowed: true, reason: policy };
}

/**
 * controller/node_controller.go `shouldEvictReplica` (v1.10.2) on a cordoned node:
 * `block-for-eviction` evicts every replica there, `block-for-eviction-if-contains-last-replica`
 * each one without a healthy replica on another node under budget. Longhorn rebuilds an evicted
 * replica on another schedulable Longhorn node that holds none of the volume (replica-soft-anti-affinity
 * off, the default) and removes the old one; with no such node the replica stays and so does the
 * budget. The rebuild happens while the drain waits: the simulated drain is one step, so the new
 * replica is healthy when the drain looks again.
 */
function evictReplicas(cluster: SimCluster, state: SimState, timing: SimTiming, node: SimNode, recorder: Recorder, now: number): void {
  const policy = drainPolicy(cluster);
  if (policy !== 'block-for-eviction' && policy !== 'block-for-eviction-if-contains-last-replica') return;
  for (const volume of cluster.kube.volumes) {
    if (!volume.replicas.includes(node.hostname)) continue;
    if (policy === 'block-for-eviction-if-contains-last-replica') {
      const covered = volume.replicas.some((h) => {
        const other = byHostname(cluster, h);
        return (
          h !== node.hostname &&
          other !== undefined &&
          !isCordoned(cluster, other) &&
          hasInstanceManagerPdb(cluster, h) &&
          isHealthyReplica(replicaView(cluster, state, volume, h, timing, now))
        );
      });
      if (covered) continue;
    }
    const target = cluster.nodes.find(
      (n) =>
        n.longhorn &&
        n !== node &&
        !volume.replicas.includes(n.hostname) &&
        !isCordoned(cluster, n) &&
        nodeReady(cluster, n) === 'True' &&
        hasInstanceManagerPdb(cluster, n.hostname),
    );
    if (target === undefined) continue;
    volume.replicas = volume.replicas.map((h) => (h === node.hostname ? target.hostname : h));
    cluster.kube.resourceVersion++;
    recorder.event({
      cluster: cluster.name,
      node: node.address,
      kind: 'longhorn-replica-evicted',
      detail: `${volume.name} → ${target.hostname}`,
    });
  }
}

/** A cordoned node's drain: Longhorn evicts replicas where its policy says so, then deletes the node's instance-manager budget when its policy allows. */
export function longhornOnDrain(
  cluster: SimCluster,
  state: SimState,
  timing: SimTiming,
  node: SimNode,
  recorder: Recorder,
  now: number,
): void {
  const pdb = cluster.kube.pdbs.find((p) => p.longhornNode === node.hostname);
  if (pdb === undefined) return;
  evictReplicas(cluster, state, timing, node, recorder, now);
  const verdict = longhornAllowsDrain(cluster, state, timing, node, now);
  if (!verdict.allowed) return;
  cluster.kube.pdbs = cluster.kube.pdbs.filter((p) => p !== pdb);
  cluster.kube.resourceVersion++;
  recorder.event({
    cluster: cluster.name,
    node: node.address,
    kind: 'longhorn-pdb-deleted',
    detail: `${pdb.namespace}/${pdb.name} (${verdict.reason})`,
  });
}

/** A Longhorn node schedulable again with its instance manager running: Longhorn protects it with a budget again. */
export function longhornOnSchedulable(cluster: SimCluster, node: SimNode, recorder: Recorder): void {
  if (!node.longhorn) return;
  // An instance-manager pod evicted from the cordoned node: Longhorn creates it again once the node is schedulable.
  const imPod = instanceManagerPodFields(cluster.name, node.hostname);
  if (!cluster.kube.pods.some((p) => p.namespace === imPod.namespace && p.name === imPod.name))
    cluster.kube.pods.push({ ...imPod, createdAt: Date.now() });
  if (hasInstanceManagerPdb(cluster, node.hostname)) return;
  const pdb = instanceManagerPdb(cluster.name, node.hostname);
  cluster.kube.pdbs.push(pdb);
  cluster.kube.resourceVersion++;
  recorder.event({ cluster: cluster.name, node: node.address, kind: 'longhorn-pdb-created', detail: `${pdb.namespace}/${pdb.name}` });
}
