/** Pod placement during drains and boots, so PDB and pod views follow the nodes. */
import { isCordoned, nodeReady } from './cluster-model.ts';
import { nameSuffix } from './kube-seed.ts';
import type { PodState, SimCluster, SimNode } from './types.ts';

const CONTROL_PLANE_TOLERANT = new Set(['coredns', 'cilium-operator']);

function tolerates(cluster: SimCluster, pod: PodState, node: SimNode): boolean {
  if (node.role === 'worker' || cluster.shape.schedulingOnControlPlanes) return true;
  const workload = pod.owner.name.replace(/-[a-z0-9]{10}$/, '');
  return CONTROL_PLANE_TOLERANT.has(workload);
}

function evictable(pod: PodState): boolean {
  return !pod.mirror && pod.owner.kind !== 'DaemonSet' && pod.owner.kind !== 'Node';
}

function pickNode(cluster: SimCluster, pod: PodState, exclude: SimNode | undefined): SimNode | undefined {
  const load = (n: SimNode): number => cluster.kube.pods.filter((p) => p.nodeName === n.hostname).length;
  return cluster.nodes
    .filter((n) => n !== exclude && n.k8sRegistered && nodeReady(cluster, n) === 'True' && !isCordoned(cluster, n))
    .filter((n) => tolerates(cluster, pod, n))
    .sort((a, b) => load(a) - load(b))[0];
}

/** Evicts what a drain evicts; controllers recreate each pod elsewhere, or leave it Pending. */
export function drainNode(cluster: SimCluster, node: SimNode, now: number): void {
  for (const pod of cluster.kube.pods) {
    if (pod.nodeName !== node.hostname || !evictable(pod)) continue;
    const target = pickNode(cluster, pod, node);
    if (pod.owner.kind === 'ReplicaSet') pod.name = `${pod.owner.name}-${nameSuffix(`${pod.name}/${now}`)}`;
    pod.nodeName = target?.hostname ?? '';
    pod.createdAt = now;
  }
}

/** Binds Pending pods once a node can take them. */
export function schedulePending(cluster: SimCluster, now: number): void {
  for (const pod of cluster.kube.pods) {
    if (pod.nodeName !== '') continue;
    const target = pickNode(cluster, pod, undefined);
    if (target) {
      pod.nodeName = target.hostname;
      pod.createdAt = now;
    }
  }
}

/** Garbage collection of the pods bound to a deleted Node. */
export function removePodsOf(cluster: SimCluster, node: SimNode): void {
  cluster.kube.pods = cluster.kube.pods.filter((p) => p.nodeName !== node.hostname || evictable(p));
  for (const pod of cluster.kube.pods) if (pod.nodeName === node.hostname) pod.nodeName = '';
}

/** A successful Eviction: the owner recreates the pod on another node (or leaves it Pending). */
export function evictPod(cluster: SimCluster, pod: PodState, now: number): void {
  const current = cluster.nodes.find((n) => n.hostname === pod.nodeName);
  if (!evictable(pod)) return;
  const target = pickNode(cluster, pod, current);
  if (pod.owner.kind === 'ReplicaSet') pod.name = `${pod.owner.name}-${nameSuffix(`${pod.name}/${now}`)}`;
  pod.nodeName = target?.hostname ?? '';
  pod.createdAt = now;
}
