import type { V1Node } from '@kubernetes/client-node';
import type { KubeApi } from '../kube/kube-api.ts';
import { findNodeByAddress } from '../talos/observe.ts';
import type { CheckResult } from './check-result.ts';
import { CILIUM_AGENT, CILIUM_ENVOY, CILIUM_OPERATOR, evaluateCilium } from './rules/cilium.ts';
import { longhornView, type LonghornView } from './rules/longhorn.ts';
import { evaluateDisruptionBudgets, instanceManagerNode } from './rules/pdb.ts';

/** Longhorn's objects, when its CRDs answer; `undefined` where Longhorn is not installed. */
export async function readLonghorn(kube: KubeApi, signal: AbortSignal): Promise<LonghornView | undefined> {
  const [volumes, replicas, settings] = await Promise.all([
    kube.listLonghornVolumes(signal),
    kube.listLonghornReplicas(signal),
    kube.listLonghornSettings(signal),
  ]);
  if (volumes === undefined || replicas === undefined) return undefined;
  const { view, unreadable } = longhornView(volumes, replicas, settings ?? []);
  // A replica the rule cannot read could be the last healthy one: refuse rather than guess.
  if (unreadable.length > 0) throw new Error(`unreadable Longhorn objects: ${unreadable.join(', ')}`);
  return view;
}

/** The Kubernetes names of the nodes to drain, with their addresses; an address Kubernetes does not know drains nothing. */
function drainTargets(nodes: readonly V1Node[], addresses: readonly string[]): { name: string; address: string }[] {
  return addresses.flatMap((address) => {
    const name = findNodeByAddress([...nodes], address)?.metadata?.name;
    return name === undefined ? [] : [{ name, address }];
  });
}

/**
 * The gate's disruption-budget check for a drain of `drainNodes` (addresses): budgets, pods and
 * nodes, and Longhorn's objects where Longhorn's own budgets exist.
 */
export async function checkDisruptionBudgets(kube: KubeApi, drainNodes: readonly string[], signal: AbortSignal): Promise<CheckResult> {
  const [pdbs, pods, nodes] = await Promise.all([kube.listDisruptionBudgets(signal), kube.listPods(signal), kube.listNodes(signal)]);
  const longhorn = pdbs.some((p) => instanceManagerNode(p) !== undefined) ? await readLonghorn(kube, signal) : undefined;
  return evaluateDisruptionBudgets(pdbs, { drain: drainTargets(nodes, drainNodes), pods, nodes, longhorn });
}

/**
 * The budgets for the drain of one node (an address), judged just before that drain: Longhorn's
 * instance-manager budgets by Longhorn's node-drain policy, CloudNativePG's primary budgets by its
 * switchover, every other budget by the pods on that node. `undefined` when Kubernetes has no Node
 * with that address: there is nothing to drain.
 */
export async function checkNodeDrain(kube: KubeApi, address: string, signal: AbortSignal): Promise<CheckResult | undefined> {
  const [pdbs, pods, nodes] = await Promise.all([kube.listDisruptionBudgets(signal), kube.listPods(signal), kube.listNodes(signal)]);
  const drain = drainTargets(nodes, [address]);
  if (drain.length === 0) return undefined;
  const longhorn = pdbs.some((p) => instanceManagerNode(p) !== undefined) ? await readLonghorn(kube, signal) : undefined;
  return evaluateDisruptionBudgets(pdbs, { drain, pods, nodes, longhorn });
}

/** The final verification's Cilium check: the agent and envoy DaemonSets, the operator Deployment and the node count. */
export async function checkCilium(kube: KubeApi, signal: AbortSignal): Promise<CheckResult> {
  const [agent, operator, envoy, nodes] = await Promise.all([
    kube.getDaemonSet(CILIUM_AGENT.namespace, CILIUM_AGENT.name, signal),
    kube.getDeployment(CILIUM_OPERATOR.namespace, CILIUM_OPERATOR.name, signal),
    kube.getDaemonSet(CILIUM_ENVOY.namespace, CILIUM_ENVOY.name, signal),
    kube.listNodes(signal),
  ]);
  return evaluateCilium(agent, operator, nodes.length, envoy);
}
