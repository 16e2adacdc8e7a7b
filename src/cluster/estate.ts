import { readFile } from 'node:fs/promises';
import type { V1Node } from '@kubernetes/client-node';
import type { ClusterConfig } from '../config/inventory.ts';
import { terraformWorkDir } from '../config/terraform-repo.ts';
import { sanitizeErrorText } from '../exec/sanitize-error-text.ts';
import type { KubeApi } from '../kube/kube-api.ts';
import { parseEtcdMembers } from '../talos/parse-etcd-members.ts';
import { talosconfigEndpoints } from '../talos/talosconfig-endpoints.ts';
import type { Talosctl } from '../talos/talosctl.ts';
import type { Tofu } from './tofu.ts';

/** One source as it was read: its answer, or why it could not be read (never "no nodes"). */
export type SourceRead<T> = { ok: true; value: T } | { ok: false; error: string };

/** A Kubernetes Node as the estate needs it. */
export interface ObservedKubeNode {
  name: string;
  /** Its InternalIP; absent on a Node that reports none. */
  address?: string;
  role: 'controlplane' | 'worker';
  /** The value of the inventory's `hostLabel`. */
  host?: string;
  /** The Talos version its OS image names (`Talos (v1.12.11)`), which picks the talosctl that asks etcd. */
  talosVersion?: string;
}

/** An etcd member: its name and the address of its first peer URL. */
export interface ObservedEtcdMember {
  id: string;
  /** Empty for a member added but not started yet. */
  hostname: string;
  address?: string;
  learner?: boolean;
}

/** What each source said of the cluster's nodes, read once per job. */
export interface EstateObservation {
  /** The current context's endpoints of the talosconfig `tofu output` gives. */
  talosconfig: SourceRead<string[]>;
  /** `talosctl etcd members`, asked of the addresses talosctl reaches the cluster through. */
  etcd: SourceRead<ObservedEtcdMember[]>;
  kube: SourceRead<ObservedKubeNode[]>;
  /** The resource instance addresses `tofu state list` prints; the rule picks the Talos VMs out of them. */
  terraform: SourceRead<string[]>;
}

/** What kind of difference between the sources a disagreement is; each names the operation that resolves it. */
export type DisagreementKind =
  | 'etcd-member-without-node'
  | 'node-undeclared'
  | 'terraform-node-not-joined'
  | 'inventory-entry-gone'
  | 'inventory-role'
  | 'inventory-missing-node'
  | 'control-plane-not-in-talosconfig'
  | 'talosconfig-endpoint-unknown';

/** One difference between the sources, with the exact difference and what to do. */
export interface Disagreement {
  kind: DisagreementKind;
  /** The node it is about, by address and (when known) name. */
  node: { address?: string; name?: string };
  /** One sentence: what differs, source by source. */
  text: string;
  /** What to do about it. */
  fix: string;
}

/** The estate as the sources show it: the nodes, their names, and every disagreement between the sources. */
export interface Estate {
  observation: EstateObservation;
  controlPlanes: string[];
  workers: string[];
  /** Node names by address: the Kubernetes Node's, else the etcd member's, else the inventory's. */
  nodeNames: Record<string, string>;
  disagreements: Disagreement[];
  /** Sources that could not be read, each with why: nothing is concluded from them. */
  unread: string[];
}

/** `talos-prd-cp-2 (10.0.30.12)`, or whichever of the two is known. */
export function describeNode(name: string | undefined, address: string | undefined): string {
  if (name !== undefined && name !== '' && address !== undefined) return `${name} (${address})`;
  return name !== undefined && name !== '' ? name : (address ?? 'a node without name or address');
}

/** The rule that turns an observation into the estate (src/rules/estate-agreement.ts), given by the composition root. */
export type JudgeEstate = (cluster: ClusterConfig, observation: EstateObservation) => Estate;

const CONTROL_PLANE_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];

/** A Kubernetes Node reduced to its name, role (from the node-role label), InternalIP and host label. */
export function observedKubeNode(node: V1Node, hostLabel: string): ObservedKubeNode | undefined {
  const name = node.metadata?.name;
  if (name === undefined) return undefined;
  const labels = node.metadata?.labels ?? {};
  const address = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
  const host = labels[hostLabel];
  const talosVersion = /\((v[^)]+)\)/.exec(node.status?.nodeInfo?.osImage ?? '')?.[1];
  return {
    name,
    ...(address === undefined ? {} : { address }),
    role: CONTROL_PLANE_LABELS.some((l) => l in labels) ? 'controlplane' : 'worker',
    ...(host === undefined ? {} : { host }),
    ...(talosVersion === undefined ? {} : { talosVersion }),
  };
}

/** The host of a peer URL (`https://10.0.30.11:2380`, `https://[fd00::1]:2380`). */
function urlHost(url: string): string | undefined {
  try {
    const host = new URL(url).hostname;
    return host.startsWith('[') ? host.slice(1, -1) : host;
  } catch {
    return undefined;
  }
}

/** Every member any asked node listed, once each (by member ID). */
export function observedEtcdMembers(stdout: string): ObservedEtcdMember[] {
  const byId = new Map<string, ObservedEtcdMember>();
  for (const m of parseEtcdMembers(stdout)) {
    if (byId.has(m.id)) continue;
    const address = m.peerUrls.map(urlHost).find((h) => h !== undefined);
    byId.set(m.id, {
      id: m.id,
      hostname: m.hostname,
      ...(address === undefined ? {} : { address }),
      ...(m.learner === undefined ? {} : { learner: m.learner }),
    });
  }
  return [...byId.values()];
}

async function read<T>(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  probe: (signal: AbortSignal) => Promise<T>,
): Promise<SourceRead<T>> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const bound = signal ? AbortSignal.any([signal, timeout]) : timeout;
  try {
    return { ok: true, value: await probe(bound) };
  } catch (error) {
    if (signal?.aborted === true) throw error;
    const reason = timeout.aborted ? `no answer in ${Math.round(timeoutMs / 1000)}s` : (error as Error).message;
    return { ok: false, error: sanitizeErrorText(reason).split('\n')[0] ?? 'failed' };
  }
}

export interface EstateReaders {
  kube: KubeApi;
  tofu: Tofu;
  /** talosctl for `etcd members`, given the Nodes read (to match the running version), or none at all. */
  talosctl: (nodes: SourceRead<ObservedKubeNode[]>) => Promise<Talosctl>;
  talosconfigPath: string;
  /** Upper bound of each read, in ms. */
  timeoutMs: number;
}

/**
 * Reads every source at once. The talosconfig's endpoints come first (the inventory's control planes
 * when it lists them, else those endpoints are where `etcd members` is asked); a source that does not
 * answer is reported as unread and the others are read all the same.
 */
export async function observeEstate(
  readers: EstateReaders,
  cluster: ClusterConfig,
  reachFirst: (talosconfig: SourceRead<string[]>) => string[],
  signal?: AbortSignal,
): Promise<EstateObservation> {
  const within = <T>(probe: (s: AbortSignal) => Promise<T>): Promise<SourceRead<T>> => read(readers.timeoutMs, signal, probe);
  // Only the endpoints leave this read: the file also holds the cluster's client key.
  const talosconfig = await within(async () => talosconfigEndpoints(await readFile(readers.talosconfigPath, 'utf8')));
  const kubeRead = within(async (s) => (await readers.kube.listNodes(s)).flatMap((n) => observedKubeNode(n, cluster.hostLabel) ?? []));
  const terraform = within(async (s) => {
    const listed = await readers.tofu.run(terraformWorkDir(cluster), ['state', 'list'], { signal: s });
    return listed.stdout
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '');
  });
  const etcd = kubeRead.then((kube) =>
    within(async (s) => {
      const asked = reachFirst(talosconfig);
      if (asked.length === 0) throw new Error('no address to ask: the inventory lists no control plane and the talosconfig no endpoint');
      const talosctl = await readers.talosctl(kube);
      const result = await talosctl.run(['etcd', 'members'], asked, { signal: s, okExitCodes: [0, 1] });
      const members = result.stdout.trim() === '' ? [] : observedEtcdMembers(result.stdout);
      if (members.length === 0) throw new Error(result.stderr.trim().split('\n').pop() || 'talosctl etcd members listed no member');
      return members;
    }),
  );
  const [kube, etcdRead, terraformRead] = await Promise.all([kubeRead, etcd, terraform]);
  return { talosconfig, etcd: etcdRead, kube, terraform: terraformRead };
}
