import type { V1Node, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';

/**
 * CloudNativePG's budgets, judged by CloudNativePG's rule (cloudnative-pg v1.30.0):
 * pkg/specs/poddisruptionbudget.go gives every Cluster a `<name>-primary` budget (minAvailable 1,
 * selecting `cnpg.io/cluster=<name>`, `cnpg.io/instanceRole=primary`), so the primary can never be
 * evicted, and from three instances a `<name>` budget for the replicas. internal/controller/replicas.go
 * (`reconcileTargetPrimaryFromPods`, `setPrimaryOnSchedulableNode`) switches over when the primary's
 * node is unschedulable: once every instance is ready and the others run on other nodes, the first
 * ready replica on a schedulable node becomes the primary. The old primary is a replica then, and
 * the primary budget selects a pod that is not on the drained node.
 */

export const CNPG_CLUSTER_LABEL = 'cnpg.io/cluster';
export const CNPG_ROLE_LABEL = 'cnpg.io/instanceRole';

/** The Cluster a `<name>-primary` budget protects, or `undefined` for any other budget. */
export function cnpgPrimaryBudgetCluster(pdb: V1PodDisruptionBudget): string | undefined {
  const labels = pdb.spec?.selector?.matchLabels ?? {};
  const cluster = labels[CNPG_CLUSTER_LABEL];
  if (cluster === undefined || labels[CNPG_ROLE_LABEL] !== 'primary') return undefined;
  return pdb.metadata?.name === `${cluster}-primary` ? cluster : undefined;
}

function role(pod: V1Pod): string | undefined {
  // `role` is the label older operators set; cnpg.io/instanceRole replaced it.
  return pod.metadata?.labels?.[CNPG_ROLE_LABEL] ?? pod.metadata?.labels?.['role'];
}

function podReady(pod: V1Pod): boolean {
  return pod.status?.phase === 'Running' && pod.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

export type CnpgJudgement = { level: 'ok' | 'block'; text: string } | undefined;

/**
 * What happens to the primary of `namespace/cluster` when `drainNode` is drained: nothing when the
 * primary runs elsewhere (`undefined`); a switchover to the named replica when CNPG can do one;
 * otherwise the budget keeps the primary and the drain blocks.
 */
export function judgeCnpgPrimary(
  namespace: string,
  cluster: string,
  drainNode: string,
  pods: readonly V1Pod[],
  nodes: readonly V1Node[],
): CnpgJudgement {
  const instances = pods.filter(
    (p) => p.metadata?.namespace === namespace && p.metadata?.labels?.[CNPG_CLUSTER_LABEL] === cluster && role(p) !== undefined,
  );
  const primary = instances.find((p) => role(p) === 'primary');
  if (primary === undefined || primary.spec?.nodeName !== drainNode) return undefined;
  const name = `${namespace}/${cluster}`;
  const others = instances.filter((p) => p !== primary);
  if (others.length === 0) {
    return {
      level: 'block',
      text: `${name} is a single-instance CloudNativePG Cluster and its primary ${primary.metadata?.name} runs on ${drainNode}: its budget ${cluster}-primary lets no drain evict it. Add a replica (spec.instances: 2 or more) and wait until it is ready, or accept the downtime and disable the budget (spec.enablePDB: false), then retry`,
    };
  }
  const schedulable = (nodeName: string | undefined): boolean => {
    const node = nodes.find((n) => n.metadata?.name === nodeName);
    return (
      node !== undefined && node.spec?.unschedulable !== true && node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'
    );
  };
  const notReady = instances.filter((p) => !podReady(p)).map((p) => p.metadata?.name);
  const sameNode = others.filter((p) => p.spec?.nodeName === drainNode).map((p) => p.metadata?.name);
  const candidate = others.find((p) => p.spec?.nodeName !== drainNode && podReady(p) && schedulable(p.spec?.nodeName));
  if (notReady.length > 0 || sameNode.length > 0 || candidate === undefined) {
    const why =
      notReady.length > 0
        ? `not every instance is ready (${notReady.join(', ')})`
        : sameNode.length > 0
          ? `${sameNode.join(', ')} run${sameNode.length === 1 ? 's' : ''} on ${drainNode} too`
          : 'no ready replica runs on another schedulable node';
    return {
      level: 'block',
      text: `${name}: its primary ${primary.metadata?.name} runs on ${drainNode} and CloudNativePG cannot switch over, because ${why}; its budget ${cluster}-primary keeps the primary there and the drain would block. Wait until a replica is ready on another node, then retry`,
    };
  }
  return {
    level: 'ok',
    text: `the primary of ${name} moves to ${candidate.metadata?.name} (on ${candidate.spec?.nodeName}) when ${drainNode} drains: CloudNativePG switches over once the node is cordoned`,
  };
}
