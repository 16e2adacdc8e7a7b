/**
 * What the CloudNativePG operator does in the simulated clusters (cloudnative-pg v1.30.0; sources in
 * reference/storage-budgets.md): its instance pods with their role labels, the budgets it creates,
 * the Cluster object, and the switchover it makes when the primary's node is cordoned.
 */
import { createHash } from 'node:crypto';
import { isCordoned, nodeReady } from './cluster-model.ts';
import { podReady, timestamp, type Json } from './kube-objects.ts';
import { uuidFrom } from './kube-seed.ts';
import type { ClusterShape, CnpgClusterState, PdbState, PodState, SimCluster, SimNode } from './types.ts';

const CLUSTER_LABEL = 'cnpg.io/cluster';
const ROLE_LABEL = 'cnpg.io/instanceRole';
const IMAGE = 'ghcr.io/cloudnative-pg/postgresql:17.6';

/** The labels of an instance (pkg/specs/pods.go): the cluster, the instance name and its role, old and new label. */
function instanceLabels(cluster: string, instance: string, role: 'primary' | 'replica'): Record<string, string> {
  return { [CLUSTER_LABEL]: cluster, 'cnpg.io/instanceName': instance, 'cnpg.io/podRole': 'instance', [ROLE_LABEL]: role, role };
}

/** The instance pods of each Cluster, one per node where it can (instance 1 the primary), as the operator places them with its default anti-affinity. */
export function seedCnpgPods(shape: ClusterShape, nodes: readonly SimNode[], createdAt: number): PodState[] {
  const candidates = nodes.filter((n) => n.role === 'worker' || shape.schedulingOnControlPlanes);
  return (shape.cnpg ?? []).flatMap((c) =>
    Array.from({ length: c.instances }, (_, i): PodState => {
      const instance = `${c.name}-${i + 1}`;
      return {
        name: instance,
        namespace: c.namespace,
        nodeName: candidates[i % Math.max(1, candidates.length)]?.hostname ?? '',
        labels: instanceLabels(c.name, instance, i === 0 ? 'primary' : 'replica'),
        owner: { kind: 'Cluster', name: c.name },
        image: IMAGE,
        createdAt,
      };
    }),
  );
}

export function seedCnpgClusters(shape: ClusterShape): CnpgClusterState[] {
  return (shape.cnpg ?? []).map((c) => ({ ...c, currentPrimary: `${c.name}-1`, switchovers: [] }));
}

/**
 * The budgets of pkg/specs/poddisruptionbudget.go (`BuildPrimaryPodDisruptionBudget`,
 * `BuildReplicasPodDisruptionBudget`): `<name>-primary` with minAvailable 1 over the primary, for
 * every Cluster, `instances: 1` included; `<name>` with minAvailable instances − 2 over the replicas,
 * from three instances.
 */
export function cnpgBudgets(shape: ClusterShape): PdbState[] {
  return (shape.cnpg ?? []).flatMap((c) => [
    { name: `${c.name}-primary`, namespace: c.namespace, minAvailable: 1, selector: { [CLUSTER_LABEL]: c.name, [ROLE_LABEL]: 'primary' } },
    ...(c.instances >= 3 ? [{ name: c.name, namespace: c.namespace, minAvailable: c.instances - 2, selector: { [CLUSTER_LABEL]: c.name, [ROLE_LABEL]: 'replica' } }] : []),
  ]);
}

function instancesOf(cluster: SimCluster, c: CnpgClusterState): PodState[] {
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
 * the primary budget keeps the primary where it is. Runs when a drain starts, the node cordoned.
 */
export function cnpgOnCordon(cluster: SimCluster, node: SimNode, now: number): void {
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

/** A `postgresql.cnpg.io/v1` Cluster as the operator reports it. */
export function renderCnpgCluster(cluster: SimCluster, c: CnpgClusterState, now: number): Json {
  const pods = instancesOf(cluster, c);
  const ready = pods.filter((p) => podReady(cluster, p));
  const healthy = ready.length === c.instances;
  const last = c.switchovers.at(-1);
  return {
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Cluster',
    metadata: {
      name: c.name,
      namespace: c.namespace,
      uid: uuidFrom(`${cluster.name}/Cluster/${c.namespace}/${c.name}`),
      resourceVersion: String(10_000 + (createHash('sha1').update(`${c.name}/${cluster.kube.resourceVersion}`).digest().readUInt32BE(0) % 900_000)),
      creationTimestamp: timestamp(cluster.createdAt),
      generation: 1,
    },
    spec: {
      instances: c.instances,
      imageName: IMAGE,
      enablePDB: true,
      primaryUpdateStrategy: 'unsupervised',
      affinity: { enablePodAntiAffinity: true, podAntiAffinityType: c.podAntiAffinityType ?? 'preferred', topologyKey: 'kubernetes.io/hostname' },
      storage: { size: '10Gi' },
    },
    status: {
      instances: pods.length,
      readyInstances: ready.length,
      currentPrimary: c.currentPrimary,
      targetPrimary: c.currentPrimary,
      ...(last ? { currentPrimaryTimestamp: timestamp(last.at), targetPrimaryTimestamp: timestamp(last.at) } : {}),
      phase: healthy ? 'Cluster in healthy state' : 'Waiting for the instances to become active',
      instancesStatus: { healthy: ready.map((p) => p.name), ...(healthy ? {} : { failed: pods.filter((p) => !ready.includes(p)).map((p) => p.name) }) },
      instanceNames: pods.map((p) => p.name),
      conditions: [
        {
          type: 'Ready',
          status: healthy ? 'True' : 'False',
          reason: healthy ? 'ClusterIsReady' : 'ClusterIsNotReady',
          message: healthy ? 'Cluster is Ready' : 'Cluster Is Not Ready',
          lastTransitionTime: timestamp(now - 60_000),
        },
      ],
    },
  };
}
