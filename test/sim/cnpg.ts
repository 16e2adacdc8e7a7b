/**
 * What the CloudNativePG operator does in the simulated clusters (cloudnative-pg v1.30.0; sources in
 * reference/storage-budgets.md): its instances' anti-affinity and the switchover it makes when the
 * primary's node is cordoned. kube-objects.ts renders the Cluster.
 */
import { isCordoned, nodeReady } from './cluster-model.ts';
import { ROLE_LABEL } from './cnpg-seed.ts';
import type { CnpgClusterState, PodState, SimCluster, SimNode } from './types.ts';

/** The instance pods of a Cluster. */
export function instancesOf(cluster: SimCluster, c: CnpgClusterState): PodState[] {
  return cluster.kube.pods.filter((p) => p.owner.kind === 'Cluster' && p.owner.name === c.name && p.namespace === c.namespace);
}

function setRole(pod: PodState, role: 'primary' | 'replica'): void {
  pod.labels = { ...pod.labels, [ROLE_LABEL]: role, role };
}

/**
 * internal/controller/replicas.go (`reconcileTargetPrimaryFromPods`, `setPrimaryOnSchedulableNode`,
 * v1.30.0): when the primary's node is unschedulable and every instance is ready with the others on
 * other nodes, the first ready replica on a schedulable node becomes the primary; the old primary is
 * a replica from then on, so the primary budget no longer selects it. Otherwise nothing changes and
 * the primary budget keeps the primary where it is. Runs when a drain starts, the node cordoned;
 * `podReady` is the pod readiness the API reports.
 */
export function cnpgOnCordon(
  cluster: SimCluster,
  node: SimNode,
  now: number,
  podReady: (cluster: SimCluster, pod: PodState) => boolean,
): void {
  for (const c of cluster.kube.cnpg ?? []) {
    const pods = instancesOf(cluster, c);
    const primary = pods.find((p) => p.name === c.currentPrimary);
    if (primary === undefined || primary.nodeName !== node.hostname || !isCordoned(cluster, node)) continue;
    const others = pods.filter((p) => p !== primary);
    const ready = pods.filter((p) => podReady(cluster, p)).length;
    if (ready !== c.instances || others.filter((p) => p.nodeName !== node.hostname).length < c.instances - 1) continue;
    const candidate = others.find((p) => {
      const where = cluster.nodes.find((n) => n.hostname === p.nodeName);
      return where !== undefined && !isCordoned(cluster, where) && nodeReady(cluster, where) === 'True' && podReady(cluster, p);
    });
    if (candidate === undefined) continue;
    setRole(primary, 'replica');
    setRole(candidate, 'primary');
    c.currentPrimary = candidate.name;
    c.switchovers.push({ from: primary.name, to: candidate.name, node: node.hostname, at: now });
    cluster.kube.resourceVersion++;
  }
}

/**
 * The pod anti-affinity CloudNativePG gives its instances (pkg/specs/pods.go `CreateAffinitySection`,
 * topology `kubernetes.io/hostname`): a node already running an instance of the same Cluster is
 * avoided (`preferred`, the default) or ruled out (`required`). 0 for any other pod or node.
 */
export function cnpgAntiAffinity(cluster: SimCluster, pod: PodState, node: SimNode): 0 | 1 | 2 {
  if (pod.owner.kind !== 'Cluster') return 0;
  const c = (cluster.kube.cnpg ?? []).find((x) => x.name === pod.owner.name && x.namespace === pod.namespace);
  if (c === undefined) return 0;
  const taken = instancesOf(cluster, c).some((p) => p !== pod && p.nodeName === node.hostname);
  if (!taken) return 0;
  return c.podAntiAffinityType === 'required' ? 2 : 1;
}
