/**
 * The CloudNativePG objects a simulated cluster starts with (cloudnative-pg v1.30.0; sources in
 * reference/storage-budgets.md): the instance pods with their role labels, and the budgets the
 * operator creates. What the operator does later is in cnpg.ts.
 */
import type { ClusterShape, CnpgClusterState, PdbState, PodState, SimNode } from './types.ts';

export const CLUSTER_LABEL = 'cnpg.io/cluster';
export const ROLE_LABEL = 'cnpg.io/instanceRole';
export const CNPG_IMAGE = 'ghcr.io/cloudnative-pg/postgresql:17.6';

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
        image: CNPG_IMAGE,
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
    ...(c.instances >= 3
      ? [
          {
            name: c.name,
            namespace: c.namespace,
            minAvailable: c.instances - 2,
            selector: { [CLUSTER_LABEL]: c.name, [ROLE_LABEL]: 'replica' },
          },
        ]
      : []),
  ]);
}
