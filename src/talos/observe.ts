import type { V1Node } from '@kubernetes/client-node';
import type { KubeApi } from '../kube/kube-api.ts';
import { parseEtcdStatus, type EtcdStatusRow } from './parse-etcd-status.ts';
import { extensionsFromGet, parseGetJson, schematicsFromGet, type GetItem } from './parse-get.ts';
import { parseNodeErrors, type NodeError } from './parse-node-errors.ts';
import { parseTalosVersion } from './parse-version.ts';
import type { Talosctl } from './talosctl.ts';

/** What one node reports right now: its Talos version, or why it did not answer. */
export type NodeVersion = { reachable: true; version: string } | { reachable: false; error: string };

export async function observeTalosVersions(
  talosctl: Talosctl,
  nodes: string[],
  signal?: AbortSignal,
  endpoints?: string[],
): Promise<Map<string, NodeVersion>> {
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

/**
 * One poll of a node that may be rebooting: its version, never a hang and never a throw for a
 * node that does not answer. The call is bounded by `probeMs` (through an endpoint that is itself
 * rebooting talosctl can wait on a connection for a long time, talos#11830), and a refused
 * connection, a timeout or an unreadable answer all mean "not back yet". Only a cancel of `signal`
 * (the job's) is thrown.
 */
export async function pollTalosVersion(
  talosctl: Talosctl,
  node: string,
  options: { probeMs: number; signal?: AbortSignal; endpoints?: string[] },
): Promise<NodeVersion> {
  const timeout = AbortSignal.timeout(options.probeMs);
  const bound = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  try {
    const result = await talosctl.run(['version'], [node], {
      signal: bound,
      timeoutMs: options.probeMs,
      okExitCodes: [0, 1],
      endpoints: options.endpoints,
    });
    const report = result.stdout.trim() === '' ? { servers: [] } : parseTalosVersion(result.stdout);
    const server = report.servers.find((s) => s.node === node) ?? (report.servers.length === 1 ? report.servers[0] : undefined);
    if (server !== undefined) return { reachable: true, version: server.tag };
    const error = parseNodeErrors(result.stderr).find((e) => e.node === node)?.message;
    return { reachable: false, error: error ?? (result.stderr.trim().split('\n').pop() || 'no answer') };
  } catch (error) {
    if (options.signal?.aborted === true) throw error;
    if (timeout.aborted) return { reachable: false, error: `no answer within ${Math.round(options.probeMs / 1000)} s` };
    return { reachable: false, error: (error as Error).message };
  }
}

/** What one node answered to a `talosctl get … -o json`: its resources, or why it did not answer. */
export type NodeGet = { reachable: true; items: GetItem[] } | { reachable: false; error: string };

/**
 * `talosctl get <resource> -o json` on `nodes`, each node's answer apart.
 *
 * A node is blamed only on evidence that names it. Up to 1.13 talosctl resolves the resource on the
 * first node (that node down fails the whole call with empty stdout) and lists the other nodes'
 * failures without their names, exit 1 (cmd/talosctl/pkg/talos/helpers/resources.go and
 * cmd/talosctl/cmd/talos/get.go, v1.13.9). So after a failed call, every node that neither answered
 * nor was named is asked on its own, one at a time, before anything is said about it.
 */
export async function getOnEachNode(
  talosctl: Talosctl,
  resource: string,
  nodes: string[],
  options: { signal?: AbortSignal; endpoints?: string[] } = {},
): Promise<Map<string, NodeGet>> {
  const ask = (some: string[]): ReturnType<Talosctl['run']> =>
    talosctl.run(['get', resource, '-o', 'json'], some, { signal: options.signal, okExitCodes: [0, 1], endpoints: options.endpoints });
  const result = await ask(nodes);
  const out = new Map<string, NodeGet>();
  const doubtful: string[] = [];
  for (const [node, read] of readEachNode(result, nodes)) {
    if (read === undefined) doubtful.push(node);
    else out.set(node, read);
  }
  for (const node of doubtful) {
    const alone = await ask([node]);
    out.set(node, readEachNode(alone, [node]).get(node) ?? { reachable: false, error: lastLine(alone.stderr) });
  }
  return new Map(nodes.map((n) => [n, out.get(n)!]));
}

/** What a node's Talos image carries: its Image Factory schematic (undefined when it lists none) and its system extensions. */
export type NodeImage = { reachable: true; schematic: string | undefined; extensions: string[] } | { reachable: false; error: string };

/**
 * `talosctl get extensions -o json` on `nodes` ({@link getOnEachNode}): each node's schematic (the
 * `schematic` pseudo-extension factory-built nodes list) and its system extensions, by name.
 */
export async function observeNodeImages(
  talosctl: Talosctl,
  nodes: string[],
  signal?: AbortSignal,
  endpoints?: string[],
): Promise<Map<string, NodeImage>> {
  const reads = await getOnEachNode(talosctl, 'extensions', nodes, { signal, endpoints });
  return new Map(
    [...reads].map(([node, read]): [string, NodeImage] => [
      node,
      read.reachable
        ? {
            reachable: true,
            schematic: schematicsFromGet(read.items)[0]?.schematic,
            extensions: extensionsFromGet(read.items).map((e) => e.name),
          }
        : read,
    ]),
  );
}

function lastLine(stderr: string): string {
  return stderr.trim().split('\n').pop() || 'no answer';
}

/**
 * What one `get … -o json` call says of each node: its resources when it answered (or the call
 * succeeded), its error when talosctl named it, and undefined when the call failed without saying
 * which node failed.
 */
function readEachNode(result: { stdout: string; stderr: string; exitCode: number }, nodes: string[]): Map<string, NodeGet | undefined> {
  const items = result.stdout.trim() === '' ? [] : parseGetJson(result.stdout);
  const nodeOf = (n: string | undefined): string | undefined => n ?? (nodes.length === 1 ? nodes[0] : undefined);
  const errors = parseNodeErrors(result.stderr);
  const out = new Map<string, NodeGet | undefined>();
  for (const node of nodes) {
    const failure = errors.find((e) => e.node === node);
    const own = items.filter((i) => nodeOf(i.node) === node);
    if (failure !== undefined) out.set(node, { reachable: false, error: failure.message });
    else if (own.length > 0 || result.exitCode === 0) out.set(node, { reachable: true, items: own });
    else if (nodes.length === 1) out.set(node, { reachable: false, error: lastLine(result.stderr) });
    else out.set(node, undefined);
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
  /** `spec.unschedulable`: cordoned, by a drain or by hand. */
  cordoned: boolean;
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
    cordoned: node?.spec?.unschedulable === true,
  };
}

export async function observeKubeNode(kube: KubeApi, address: string, hostLabel: string, signal: AbortSignal): Promise<KubeNodeView> {
  return kubeNodeView(findNodeByAddress(await kube.listNodes(signal), address), hostLabel);
}

/** What `talosctl etcd status` showed: a row per member that answered, and the errors talosctl attributed to nodes. */
export interface EtcdStatusObservation {
  rows: EtcdStatusRow[];
  nodeErrors: NodeError[];
}

/** `talosctl etcd status` on `controlPlanes`, read; the verdict on it is the health gate's (src/health/etcd-quorum-check.ts). */
export async function observeEtcdStatus(
  talosctl: Talosctl,
  controlPlanes: string[],
  signal?: AbortSignal,
  endpoints?: string[],
): Promise<EtcdStatusObservation> {
  const result = await talosctl.run(['etcd', 'status'], controlPlanes, { signal, okExitCodes: [0, 1], endpoints });
  return { rows: result.stdout.trim() === '' ? [] : parseEtcdStatus(result.stdout), nodeErrors: parseNodeErrors(result.stderr) };
}
