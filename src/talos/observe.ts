import type { V1Node } from '@kubernetes/client-node';
import type { KubeApi } from '../kube/kube-api.ts';
import { parseEtcdStatus } from './parse-etcd-status.ts';
import { parseNodeErrors } from './parse-node-errors.ts';
import { parseTalosVersion } from './parse-version.ts';
import type { Talosctl } from './talosctl.ts';
import { evaluateEtcdStatus } from '../health/rules/etcd-status.ts';
import type { CheckResult } from '../health/check-result.ts';

/** What one node reports right now: its Talos version, or why it did not answer. */
export type NodeVersion = { reachable: true; version: string } | { reachable: false; error: string };

export async function observeTalosVersions(talosctl: Talosctl, nodes: string[], signal?: AbortSignal, endpoints?: string[]): Promise<Map<string, NodeVersion>> {
  const result = await talosctl.run(['version'], nodes, { signal, okExitCodes: [0, 1], endpoints });
  const out = new Map<string, NodeVersion>();
  const report = result.stdout.trim() === '' ? { servers: [] } : parseTalosVersion(result.stdout);
  for (const server of report.servers) {
    const node = server.node ?? (nodes.length === 1 ? nodes[0] : undefined);
    if (node !== undefined) out.set(node, { reachable: true, version: server.tag });
  }
  for (const error of parseNodeErrors(result.stderr)) {
    if (!out.has(error.node)) out.set(error.node, { reachable: false, error: error.message });
  }
  for (const node of nodes) {
    if (!out.has(node)) out.set(node, { reachable: false, error: result.stderr.trim().split('\n').pop() || 'no answer' });
  }
  return out;
}

export function findNodeByAddress(nodes: V1Node[], address: string): V1Node | undefined {
  return nodes.find((n) => (n.status?.addresses ?? []).some((a) => a.address === address));
}

export interface KubeNodeView {
  name: string | undefined;
  ready: boolean;
  /** `Talos (v1.11.5)` → `v1.11.5`. */
  osVersion: string | undefined;
  kubeletVersion: string | undefined;
  host: string | undefined;
  /** Changes with every boot of the node. */
  bootId: string | undefined;
}

export function kubeNodeView(node: V1Node | undefined, hostLabel: string): KubeNodeView {
  const ready = node?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const osImage = node?.status?.nodeInfo?.osImage ?? '';
  return {
    name: node?.metadata?.name,
    ready: ready && node?.spec?.unschedulable !== true,
    osVersion: /\((v[^)]+)\)/.exec(osImage)?.[1],
    kubeletVersion: node?.status?.nodeInfo?.kubeletVersion,
    host: node?.metadata?.labels?.[hostLabel],
    bootId: node?.status?.nodeInfo?.bootID || undefined,
  };
}

export async function observeKubeNode(kube: KubeApi, address: string, hostLabel: string, signal: AbortSignal): Promise<KubeNodeView> {
  return kubeNodeView(findNodeByAddress(await kube.listNodes(signal), address), hostLabel);
}

/** etcd quorum and a single agreed leader across every control plane, as the gate judges it. */
export async function checkEtcdQuorum(talosctl: Talosctl, controlPlanes: string[], signal?: AbortSignal, endpoints?: string[]): Promise<CheckResult> {
  const result = await talosctl.run(['etcd', 'status'], controlPlanes, { signal, okExitCodes: [0, 1], endpoints });
  const rows = result.stdout.trim() === '' ? [] : parseEtcdStatus(result.stdout);
  return evaluateEtcdStatus(rows, controlPlanes, parseNodeErrors(result.stderr));
}
