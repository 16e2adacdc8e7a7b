/** Pod placement during drains and boots, so PDB and pod views follow the nodes. */
import { cnpgAntiAffinity, cnpgOnCordon } from './cnpg.ts';
import { isCordoned, nodeReady } from './cluster-model.ts';
import { disruptionsAllowed, pdbsMatching, podReady } from './kube-objects.ts';
import { nameSuffix } from './kube-seed.ts';
import type { PodState, SimCluster, SimNode } from './types.ts';

const CONTROL_PLANE_TOLERANT = new Set(['coredns', 'cilium-operator']);

function tolerates(cluster: SimCluster, pod: PodState, node: SimNode): boolean {
  if (node.role === 'worker' || cluster.shape.schedulingOnControlPlanes) return true;
  const workload = pod.owner.name.replace(/-[a-z0-9]{10}$/, '');
  return CONTROL_PLANE_TOLERANT.has(workload);
}

/**
 * Pods a controller recreates elsewhere. DaemonSet, static and Longhorn instance-manager pods belong
 * to their node; a pod without a controller is skipped by the drain inside the node (Talos < 1.13)
 * and started again by the kubelet after the reboot.
 */
function evictable(pod: PodState): boolean {
  return (
    !pod.mirror &&
    pod.owner.kind !== 'DaemonSet' &&
    pod.owner.kind !== 'Node' &&
    pod.owner.kind !== 'InstanceManager' &&
    pod.owner.kind !== 'None'
  );
}

/** The budget that refuses this pod's eviction now, if any (`ns/name`). */
function refusingBudget(cluster: SimCluster, pod: PodState): string | undefined {
  const budget = pdbsMatching(cluster, pod).find((b) => disruptionsAllowed(cluster, b).allowed < 1);
  return budget === undefined ? undefined : `${budget.namespace}/${budget.name}`;
}

function pickNode(cluster: SimCluster, pod: PodState, exclude: SimNode | undefined): SimNode | undefined {
  const load = (n: SimNode): number => cluster.kube.pods.filter((p) => p.nodeName === n.hostname).length;
  return cluster.nodes
    .filter((n) => n !== exclude && n.k8sRegistered && nodeReady(cluster, n) === 'True' && !isCordoned(cluster, n))
    .filter((n) => tolerates(cluster, pod, n) && cnpgAntiAffinity(cluster, pod, n) < 2)
    .sort((a, b) => cnpgAntiAffinity(cluster, pod, a) - cnpgAntiAffinity(cluster, pod, b) || load(a) - load(b))[0];
}

/**
 * Evicts what a drain evicts, through the budgets: controllers recreate each evicted pod elsewhere,
 * or leave it Pending. Talos skips DaemonSet and static pods. A pod whose budget refuses stays
 * (Talos retries until its drain timeout, then stops the pods anyway). Once the workloads are
 * gone, `afterWorkloads` runs (Longhorn decides about its budget then), and the instance-manager
 * pods are evicted only if their budget lets them. Returns the budgets that refused (`ns/name`).
 */
export function drainNode(
  cluster: SimCluster,
  node: SimNode,
  now: number,
  afterWorkloads?: () => void,
  options: DrainOptions = {},
): string[] {
  const refused = new Set<string>();
  // CloudNativePG sees the cordon before the evictions and switches its primaries over.
  cnpgOnCordon(cluster, node, now, podReady);
  const onNode = (): PodState[] => cluster.kube.pods.filter((p) => p.nodeName === node.hostname);
  for (const pod of onNode().filter(evictable)) {
    const budget = refusingBudget(cluster, pod);
    options.onEviction?.(pod, budget);
    if (budget !== undefined) {
      refused.add(budget);
      continue;
    }
    const target = pickNode(cluster, pod, node);
    if (pod.owner.kind === 'ReplicaSet') pod.name = `${pod.owner.name}-${nameSuffix(`${pod.name}/${now}`)}`;
    pod.nodeName = target?.hostname ?? '';
    pod.createdAt = now;
  }
  afterWorkloads?.();
  // An evicted instance manager stops with its node; Longhorn starts it again when the node is back.
  for (const pod of onNode().filter((p) => p.owner.kind === 'InstanceManager')) {
    const budget = refusingBudget(cluster, pod);
    if (budget !== undefined) {
      options.onEviction?.(pod, budget);
      refused.add(budget);
    }
  }
  return [...refused];
}

/** How a caller watches a drain. */
export interface DrainOptions {
  /**
   * Called for each pod the drain asks to evict, before it moves, with the budget (`ns/name`) that
   * refused it, if one did: talosctl ≥ 1.13 reports each eviction (nodedrain.go). Default: none.
   */
  onEviction?: (pod: PodState, refusedBy: string | undefined) => void;
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
  // Longhorn deletes the budget of an instance manager that no longer exists.
  cluster.kube.pdbs = cluster.kube.pdbs.filter((p) => p.longhornNode !== node.hostname);
  for (const pod of cluster.kube.pods) if (pod.nodeName === node.hostname) pod.nodeName = '';
}

/** A successful Eviction: the owner recreates the pod on another node (or leaves it Pending). */
export function evictPod(cluster: SimCluster, pod: PodState, now: number): void {
  // An evicted pod without a controller is deleted, and nothing creates it again.
  if (pod.owner.kind === 'None') {
    cluster.kube.pods = cluster.kube.pods.filter((p) => p !== pod);
    return;
  }
  const current = cluster.nodes.find((n) => n.hostname === pod.nodeName);
  if (!evictable(pod)) return;
  const target = pickNode(cluster, pod, current);
  if (pod.owner.kind === 'ReplicaSet') pod.name = `${pod.owner.name}-${nameSuffix(`${pod.name}/${now}`)}`;
  pod.nodeName = target?.hostname ?? '';
  pod.createdAt = now;
}
