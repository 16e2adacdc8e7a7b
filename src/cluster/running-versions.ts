import { allNodes, type ClusterConfig } from '../config/inventory.ts';
import type { KubeApi } from '../kube/kube-api.ts';
import { observeTalosVersions } from '../talos/observe.ts';
import type { Talosctl } from '../talos/talosctl.ts';

/** What one node runs, or why it is unknown. */
export type NodeRunning = string | { unknown: string };

/**
 * What every node of the cluster runs now: Talos from `talosctl version` on each node of the job's
 * cluster (the observed one), Kubernetes from every Node's kubeletVersion. Never a list of its own.
 */
export async function observeRunningVersions(
  talosctl: Talosctl,
  kube: KubeApi,
  cluster: ClusterConfig,
  signal: AbortSignal,
): Promise<{ talos: Map<string, NodeRunning>; kubernetes: Map<string, NodeRunning> }> {
  const nodes = allNodes(cluster);
  const [versions, kubeNodes] = await Promise.all([
    observeTalosVersions(talosctl, nodes, signal),
    kube.listNodes(signal).then(
      (listed) => ({ listed }),
      (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
    ),
  ]);
  const talos = new Map<string, NodeRunning>();
  for (const node of nodes) {
    const v = versions.get(node);
    talos.set(node, v?.reachable === true ? v.version : { unknown: v?.error ?? 'no answer' });
  }
  const kubernetes = new Map<string, NodeRunning>();
  if ('error' in kubeNodes) kubernetes.set('Kubernetes API', { unknown: kubeNodes.error });
  else
    for (const node of kubeNodes.listed) {
      const version = node.status?.nodeInfo?.kubeletVersion;
      kubernetes.set(node.metadata?.name ?? '?', version === undefined || version === '' ? { unknown: 'no kubeletVersion' } : version);
    }
  return { talos, kubernetes };
}
