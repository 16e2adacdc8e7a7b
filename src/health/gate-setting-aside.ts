import type { ClusterConfig } from '../config/inventory.ts';
import type { KubeApi } from '../kube/kube-api.ts';
import { findNodeByAddress } from '../talos/observe.ts';
import { runHealthGate, type GateDeps, type GateReport } from './health-gate.ts';

/**
 * A failed node an operation replaces: the health gate before the replacement judges the cluster
 * without it, because it is the reason for the operation, not a stop; anything else still stops.
 */
export interface SetAside {
  /** Its address in the inventory. */
  address: string;
}

/**
 * The gate's checks with one node set aside. `talosctl health` is left out: it compares the etcd
 * membership and the Kubernetes Nodes with the control planes it is given, so it fails for as long
 * as the failed node's member and Node exist; `etcd status`, `service etcd` and the Node list judge
 * the rest without it.
 */
const CHECKS_SETTING_ASIDE = ['talos-version', 'etcd-service', 'etcd-status', 'nodes', 'pods', 'flux', 'disruption-budgets', 'cilium'];

/** The inventory without the node set aside. */
function withoutNode(cluster: ClusterConfig, address: string): ClusterConfig {
  const keep = (list: string[]): string[] => list.filter((a) => a !== address);
  return {
    ...cluster,
    controlPlanes: keep(cluster.controlPlanes),
    workers: keep(cluster.workers),
    longhornNodes: keep(cluster.longhornNodes),
    defaultClassNodes: keep(cluster.defaultClassNodes),
  };
}

/** The Kubernetes API as the gate reads it with the node set aside: neither its Node nor the pods bound to it are listed. */
function kubeWithout(kube: KubeApi, address: string): KubeApi {
  const nameOf = async (signal: AbortSignal): Promise<{ nodes: Awaited<ReturnType<KubeApi['listNodes']>>; name?: string }> => {
    const nodes = await kube.listNodes(signal);
    return { nodes, name: findNodeByAddress(nodes, address)?.metadata?.name };
  };
  const listNodes: KubeApi['listNodes'] = async (signal) => {
    const { nodes, name } = await nameOf(signal);
    return nodes.filter((n) => name === undefined || n.metadata?.name !== name);
  };
  const listPods: KubeApi['listPods'] = async (signal) => {
    const [{ name }, pods] = await Promise.all([nameOf(signal), kube.listPods(signal)]);
    return pods.filter((p) => name === undefined || p.spec?.nodeName !== name);
  };
  // A proxy, not a copy: the client may be an object whose methods live on its prototype.
  return new Proxy(kube, {
    get(target, key, receiver): unknown {
      if (key === 'listNodes') return listNodes;
      if (key === 'listPods') return listPods;
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The standard health gate of the cluster with `aside` left out of every check (see {@link CHECKS_SETTING_ASIDE});
 * without a node to set aside, the standard gate itself.
 */
export async function runHealthGateSettingAside(cluster: ClusterConfig, deps: GateDeps, aside: SetAside | undefined): Promise<GateReport> {
  if (aside === undefined) return runHealthGate(cluster, deps);
  const only = CHECKS_SETTING_ASIDE.filter((id) => deps.only === undefined || deps.only.includes(id));
  return runHealthGate(withoutNode(cluster, aside.address), { ...deps, kube: kubeWithout(deps.kube, aside.address), only });
}
