import type { V1Node } from '@kubernetes/client-node';
import { allNodes, type ClusterConfig } from '../../../src/config/inventory.ts';
import { nodeLabel } from '../../../src/config/node-names.ts';
import type { ClusterSession } from '../../../src/cluster/cluster-session.ts';
import { findNodeByAddress, kubeNodeView, observeTalosVersions, type KubeNodeView, type NodeVersion } from '../../../src/talos/observe.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { probeSignals } from '../../engine/job-context.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';
import { endpointsAvoiding } from './node-endpoints.ts';
import type { CommonCheckInput } from '../../engine/playbook.ts';
import { talosctlFor } from '../../engine/talosctl-client.ts';

/** What a rollback or a removal needs to know about its node before planning. */
export interface NodeTarget {
  address: string;
  role: 'control plane' | 'worker';
  view: KubeNodeView;
  /** Every Kubernetes Node, as listed for this observation. */
  kubeNodes: V1Node[];
  /** talosctl matching the Talos the node runs. */
  talosctl: Talosctl;
  /** What the node reports to talosctl now, asked through the other control planes. */
  version: NodeVersion | undefined;
  /** The Talos version it runs: as talosctl reports it, or Kubernetes when talosctl has no answer. */
  running: string | undefined;
  refusals: string[];
  /** What the engine's talosctl client check and health gate need: the client chosen for the node, and what it runs. */
  common: CommonCheckInput;
}

export function roleOf(cluster: ClusterConfig, address: string): 'control plane' | 'worker' {
  return cluster.controlPlanes.includes(address) ? 'control plane' : 'worker';
}

/**
 * The node as Kubernetes and talosctl see it; a node that does not answer is a refusal:
 * `unreachable` says why that matters for the operation. The client chosen for the node goes to
 * the engine's talosctl client check (a missing binary, or a client of another version, is a
 * refusal, as for upgrades).
 */
export async function observeNodeTarget(
  session: ClusterSession,
  cluster: ClusterConfig,
  address: string,
  probe: () => AbortSignal,
  unreachable: string,
): Promise<NodeTarget> {
  const refusals: string[] = [];
  const kubeNodes = await session.kube.listNodes(probe());
  const view = kubeNodeView(findNodeByAddress(kubeNodes, address), cluster.hostLabel);
  const chosen = await talosctlFor(session, view.osVersion);
  const talosctl = chosen.talosctl;
  const version = (await observeTalosVersions(talosctl, [address], probe(), endpointsAvoiding(cluster, address))).get(address);
  if (version?.reachable !== true) refusals.push(`${address} does not answer talosctl (${version?.error ?? 'no answer'}): ${unreachable}`);
  const running = version?.reachable === true ? version.version : view.osVersion;
  return {
    address,
    role: roleOf(cluster, address),
    view,
    kubeNodes,
    talosctl,
    version,
    running,
    refusals,
    common: { talosctl, clientRefusal: chosen.refusal, running, where: address },
  };
}

/** The steps of an operation on one node, each carrying the node's facts for its messages. */
export function nodeSteps(node: NodeTarget, steps: readonly (readonly [id: string, kind: Step['kind']])[]): Step[] {
  return steps.map(([id, kind]) => ({
    id,
    kind,
    node: node.address,
    nodeName: node.view.name,
    host: node.view.host,
    status: 'pending' as const,
  }));
}

/** A node the sources do not show (`cluster` is the observed one): nothing is done to an address that is no node. */
export function notObservedRefusal(cluster: ClusterConfig, address: string): string[] {
  if (allNodes(cluster).includes(address)) return [];
  const nodes = allNodes(cluster).map((a) => nodeLabel(cluster, a));
  return [
    `${address} is not a node of *${cluster.name}*: neither etcd nor Kubernetes knows it (its nodes: ${nodes.join(', ') || 'none found'})`,
  ];
}

/** The inventory without one node: what the cluster is once that node is gone. */
export function clusterWithout(cluster: ClusterConfig, address: string): ClusterConfig {
  return {
    ...cluster,
    controlPlanes: cluster.controlPlanes.filter((a) => a !== address),
    workers: cluster.workers.filter((a) => a !== address),
    longhornNodes: cluster.longhornNodes.filter((a) => a !== address),
    defaultClassNodes: cluster.defaultClassNodes.filter((a) => a !== address),
  };
}

/** talosctl whose default endpoints are `endpoints`: the removed node is no endpoint any more. */
export function withEndpoints(talosctl: Talosctl, endpoints: string[]): Talosctl {
  return {
    binary: talosctl.binary,
    run: (args, nodes, options = {}) => talosctl.run(args, nodes, { ...options, endpoints: options.endpoints ?? endpoints }),
  };
}

/**
 * The start of a one-node operation's preflight (a rollback, a removal): the node observed, the
 * refusals that found, and the plan's notes to add to. `unreachable`: see `observeNodeTarget`.
 */
export async function nodePreflight(
  deps: Pick<PlaybookDeps, 'timeouts'>,
  target: { cluster: ClusterConfig; op: Operation; session: ClusterSession; signal: AbortSignal | undefined },
  unreachable: string,
): Promise<{ probe: () => AbortSignal; address: string; node: NodeTarget; refusals: string[]; notes: string[] }> {
  const probe = probeSignals(deps.timeouts.probeMs, target.signal);
  const address = target.op.target.node!;
  const node = await observeNodeTarget(target.session, target.cluster, address, probe, unreachable);
  return { probe, address, node, refusals: [...notObservedRefusal(target.cluster, address), ...node.refusals], notes: [] };
}
