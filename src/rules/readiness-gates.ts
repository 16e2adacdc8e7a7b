import { isIP } from 'node:net';
import type { V1Namespace, V1Node } from '@kubernetes/client-node';
import { z } from 'zod';
import type { ClusterConfig } from '../config/inventory.ts';
import type { CustomObject } from '../kube/kube-api.ts';
import type { NodeError } from '../talos/parse-node-errors.ts';
import type { NodeVips } from '../talos/machine-config-vips.ts';
import type { ExtensionInfo } from '../talos/parse-get.ts';
import type { GateStatus, Observed, ReadinessGate } from './gate-result.ts';
import { applySignOffs, type ClusterShape, type GateSignOff } from './gate-signoff.ts';
import { manualGates, rehearsalGate, type StagingRecords } from './readiness-manual.ts';
import { endpointVipVerdict, vipEvidence } from './readiness/endpoint-vip.ts';
import { backupSchedulesGate, type BackupObservations } from './readiness/backup-schedules.ts';
import { monitoringGate } from './readiness/monitoring.ts';
import { hostPlacementGate } from './readiness/host-placement.ts';
import { withWorkloadSpread, type Workload } from './readiness/workload-spread.ts';
import { longhornStorageGate, type UserVolumesByNode } from './readiness/longhorn-storage.ts';
import { shapeOf, stagingShapeGate, type ClusterShapeSeen } from './readiness/staging-shape.ts';

export type { GateStatus, Observed, ReadinessGate } from './gate-result.ts';

/** The inventory fields the gates read. */
export type ReadinessCluster = Pick<
  ClusterConfig,
  'name' | 'controlPlanes' | 'workers' | 'hostLabel' | 'kubernetesEndpoint' | 'fluxPath' | 'schedules'
>;

/** `talosctl get extensions` on every inventory node, and the nodes that did not answer. */
export interface ExtensionsObserved {
  extensions: ExtensionInfo[];
  nodeErrors: NodeError[];
}

export interface ReadinessObservations {
  /** `kubectl get nodes`. */
  nodes: Observed<V1Node[]>;
  /** The endpoints of the current context of the cluster's talosconfig. */
  talosEndpoints: Observed<string[]>;
  /**
   * The server of the current context of the kubeconfig Terraform outputs (`talos_kubeconfig`),
   * `undefined` when it names none. Absent: not observed, the inventory's declaration is judged.
   */
  kubeconfigServer?: Observed<string | undefined>;
  /** Each control plane's virtual IPs, from its machine configuration; absent: not read, a person judges. */
  controlPlaneVips?: Observed<Map<string, NodeVips>>;
  extensions: Observed<ExtensionsObserved>;
  /** The `longhorn-system` namespace; `undefined` when it does not exist. */
  longhornNamespace: Observed<V1Namespace | undefined>;
  kustomizations: Observed<CustomObject[]>;
  /** `settings.longhorn.io`; `undefined` without Longhorn. */
  longhornSettings: Observed<CustomObject[] | undefined>;
  /** `nodes.longhorn.io`; `undefined` without Longhorn. */
  longhornNodes: Observed<CustomObject[] | undefined>;
  /** Each Kubernetes node's Talos user volumes by type (`talosctl get volumestatus`), by node name. */
  userVolumes: Observed<UserVolumesByNode>;
  /** Longhorn's recurring jobs and CloudNativePG's Clusters and scheduled backups. */
  backups: BackupObservations;
  /** prometheus-operator's rules and service monitors; `undefined` without its CRDs. */
  monitoring: { rules: Observed<CustomObject[] | undefined>; serviceMonitors: Observed<CustomObject[] | undefined> };
  /** Every Deployment and StatefulSet, each tagged with its kind; absent: not read, the gate judges Longhorn only. */
  workloads?: Observed<Workload[]>;
  /** The bot's own records of the staging cluster; `undefined` when the inventory has none. */
  staging: StagingRecords | undefined;
  /** Production only: the staging cluster's observed shape, `staging` undefined when the inventory has none. */
  stagingShape?: { staging: Observed<ClusterShapeSeen> | undefined };
  /** The approvers' sign-offs of this cluster's by-hand gates, judged against its shape now. */
  signOffs?: { given: GateSignOff[]; shape: ClusterShape; now: Date; maxAgeMs: number };
}

export interface ReadinessReport {
  cluster: string;
  /** Every gate checked by the bot and passed, or signed off by an approver: none failed, none waits for a person. */
  ready: boolean;
  /** Titles of the failed gates, in runbook order. */
  failed: string[];
  gates: ReadinessGate[];
  counts: Record<GateStatus, number>;
}

const CONTROL_PLANE_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];
const LONGHORN_EXTENSIONS = ['siderolabs/iscsi-tools', 'siderolabs/util-linux-tools'];
const LONGHORN_NAMESPACE = 'longhorn-system';
const ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce';
/** ADR 007: three hyperconverged control planes on three Proxmox hosts. */
const CONTROL_PLANES_NEEDED = 3;

function nodeName(node: V1Node): string {
  return node.metadata?.name ?? '<unnamed>';
}

function isControlPlane(node: V1Node): boolean {
  const labels = node.metadata?.labels ?? {};
  return CONTROL_PLANE_LABELS.some((label) => label in labels);
}

function internalIp(node: V1Node): string | undefined {
  return node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
}

function nodeAddresses(node: V1Node): string[] {
  return (node.status?.addresses ?? []).filter((a) => a.type === 'InternalIP' || a.type === 'ExternalIP').map((a) => a.address);
}

function hostOf(node: V1Node, hostLabel: string): string | undefined {
  const value = node.metadata?.labels?.[hostLabel];
  return value === undefined || value === '' ? undefined : value;
}

function unreadable(id: string, title: string, what: string, error: string): ReadinessGate {
  return { id, title, status: 'failed', summary: `could not read ${what}: ${error}`, evidence: [error] };
}

function list(items: string[]): string {
  return items.join(', ');
}

function count(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : pluralForm}`;
}

/**
 * ADR 007: three control-plane nodes, each on its own Proxmox host per the host label. The
 * inventory must list them all too, since every production command names each address.
 */
export function controlPlaneTopologyGate(cluster: ReadinessCluster, nodes: Observed<V1Node[]>): ReadinessGate {
  const id = 'control-plane-topology';
  const title = 'Three control planes on three Proxmox hosts';
  if (!nodes.ok) return unreadable(id, title, 'the Kubernetes nodes', nodes.error);
  const controlPlanes = nodes.value.filter(isControlPlane);
  const workers = nodes.value.filter((n) => !isControlPlane(n));
  const evidence = nodes.value.map(
    (n) =>
      `${nodeName(n)}  ${isControlPlane(n) ? 'control-plane' : 'worker'}  ${internalIp(n) ?? '<no address>'}  ${cluster.hostLabel}=${hostOf(n, cluster.hostLabel) ?? '<unset>'}`,
  );
  const problems: string[] = [];
  if (controlPlanes.length < CONTROL_PLANES_NEEDED) {
    problems.push(`Kubernetes lists ${count(controlPlanes.length, 'control plane')}, ${CONTROL_PLANES_NEEDED} are needed`);
  }
  if (cluster.controlPlanes.length < CONTROL_PLANES_NEEDED) {
    problems.push(`the inventory lists ${count(cluster.controlPlanes.length, 'control-plane address', 'control-plane addresses')}`);
  }
  const byHost = new Map<string, string[]>();
  const unlabelled: string[] = [];
  for (const node of controlPlanes) {
    const host = hostOf(node, cluster.hostLabel);
    if (host === undefined) unlabelled.push(nodeName(node));
    else byHost.set(host, [...(byHost.get(host) ?? []), nodeName(node)]);
  }
  for (const [host, names] of byHost) {
    if (names.length > 1) problems.push(`${list(names)} share the host ${host}`);
  }
  if (unlabelled.length > 0)
    problems.push(`${list(unlabelled)} ${unlabelled.length === 1 ? 'has' : 'have'} no ${cluster.hostLabel} label, so the host is unknown`);
  if (workers.length > 0) evidence.push(`${count(workers.length, 'dedicated worker')}: add workers only when CPU or memory runs short`);
  const hosts = [...byHost.keys()].sort();
  if (problems.length > 0) {
    const shape = `${count(controlPlanes.length, 'control plane')} on ${count(hosts.length, 'host')}${hosts.length > 0 ? ` (${list(hosts)})` : ''}`;
    return {
      id,
      title,
      status: 'failed',
      summary: `${shape}: ${problems.join('; ')}. Run three control-plane nodes on three different Proxmox hosts (ADR 007)`,
      evidence,
    };
  }
  return {
    id,
    title,
    status: 'passed',
    summary: `${count(controlPlanes.length, 'control plane')} on ${count(hosts.length, 'host')} (${list(hosts)})`,
    evidence,
  };
}

/** Hyperconverged nodes run workloads: `allowSchedulingOnControlPlanes: true` leaves no NoSchedule taint. */
export function controlPlaneSchedulingGate(nodes: Observed<V1Node[]>): ReadinessGate {
  const id = 'control-plane-scheduling';
  const title = 'Scheduling allowed on control planes';
  if (!nodes.ok) return unreadable(id, title, 'the Kubernetes nodes', nodes.error);
  const controlPlanes = nodes.value.filter(isControlPlane);
  if (controlPlanes.length === 0) return { id, title, status: 'failed', summary: 'Kubernetes lists no control-plane node', evidence: [] };
  const tainted = controlPlanes.flatMap((node) =>
    (node.spec?.taints ?? [])
      .filter((t) => CONTROL_PLANE_LABELS.includes(t.key) && t.effect === 'NoSchedule')
      .map((t) => `${nodeName(node)} is tainted ${t.key}:${t.effect}`),
  );
  const evidence = controlPlanes.map((node) => {
    const taints = (node.spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`);
    return `${nodeName(node)}  taints: ${taints.length > 0 ? list(taints) : '<none>'}`;
  });
  if (tainted.length > 0) {
    return {
      id,
      title,
      status: 'failed',
      summary: `${tainted.join('; ')}. Set allowSchedulingOnControlPlanes: true in the machine configuration`,
      evidence,
    };
  }
  return {
    id,
    title,
    status: 'passed',
    summary: `workloads may run on all ${count(controlPlanes.length, 'control plane')}: no control-plane NoSchedule taint`,
    evidence,
  };
}

/** The host of an endpoint such as `https://10.0.30.10:6443`, `10.0.30.10:6443` or `[fd00::10]:6443`. */
export function endpointHost(endpoint: string): string | undefined {
  const trimmed = endpoint.trim();
  if (isIP(trimmed) !== 0) return trimmed;
  try {
    const url = new URL(trimmed.includes('://') ? trimmed : `https://${trimmed}`);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    return host === '' ? undefined : host;
  } catch {
    return undefined;
  }
}

/** A host the bot reaches only through a local tunnel or proxy: it does not show the cluster's endpoint. */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** The Kubernetes endpoint to judge: the kubeconfig's server when it shows one, else the inventory's declaration. */
interface JudgedEndpoint {
  endpoint: string;
  host: string | undefined;
  /** For messages: where the endpoint was read. */
  source: string;
  /** Read from the kubeconfig's server rather than the inventory. */
  observed: boolean;
  evidence: string[];
  /** The inventory declares another endpoint than the kubeconfig uses. */
  disagreement?: string;
}

function judgedEndpoint(cluster: ReadinessCluster, server: Observed<string | undefined> | undefined): JudgedEndpoint | undefined {
  const declared = cluster.kubernetesEndpoint;
  const evidence: string[] = [];
  if (server !== undefined && !server.ok)
    evidence.push(`kubeconfig server unknown (${server.error}); the inventory's declaration is judged`);
  const observed = server?.ok === true ? server.value : undefined;
  const observedHost = observed === undefined ? undefined : endpointHost(observed);
  if (observed !== undefined && observedHost !== undefined && isLoopback(observedHost)) {
    evidence.push(`kubeconfig server: ${observed} (a local tunnel or proxy, which does not show the cluster's endpoint)`);
  } else if (observed !== undefined) {
    evidence.push(`kubeconfig server (tofu output -raw talos_kubeconfig): ${observed}`);
    const declaredHost = declared === undefined ? undefined : endpointHost(declared);
    const disagreement =
      declared !== undefined && declaredHost !== observedHost
        ? `the inventory's kubernetesEndpoint ${declared} is not the server of the kubeconfig Terraform outputs (${observed}): correct kubernetesEndpoint in the inventory`
        : undefined;
    if (declared !== undefined) evidence.push(`inventory kubernetesEndpoint: ${declared}`);
    return {
      endpoint: observed,
      host: observedHost,
      source: 'the server of the kubeconfig Terraform outputs',
      observed: true,
      evidence,
      disagreement,
    };
  }
  if (declared === undefined) return undefined;
  evidence.push(`kubernetesEndpoint: ${declared}`);
  return { endpoint: declared, host: endpointHost(declared), source: "the inventory's kubernetesEndpoint", observed: false, evidence };
}

/** The virtual IP the cluster's Kubernetes endpoint names, when it names one: the kubeconfig's server, else the inventory's. */
function endpointVip(cluster: ReadinessCluster, server: Observed<string | undefined> | undefined): string | undefined {
  const judged = judgedEndpoint(cluster, server);
  return judged?.host !== undefined && isIP(judged.host) !== 0 ? judged.host : undefined;
}

/**
 * The Kubernetes endpoint must be a Talos Layer 2 virtual IP, not a node's address: with a node
 * address the API goes down with that node. The endpoint judged is the server of the kubeconfig
 * Terraform outputs, as the cluster really is; the inventory's `kubernetesEndpoint` only when
 * that shows none (not observed, or reached through a local tunnel), and it must agree. An IP
 * passes only when every control plane's machine configuration declares it as its virtual IP.
 */
export function kubernetesEndpointGate(
  cluster: ReadinessCluster,
  nodes: Observed<V1Node[]>,
  kubeconfigServer?: Observed<string | undefined>,
  controlPlaneVips?: Observed<Map<string, NodeVips>>,
): ReadinessGate {
  const id = 'kubernetes-endpoint';
  const title = 'Kubernetes endpoint is a virtual IP';
  const judged = judgedEndpoint(cluster, kubeconfigServer);
  if (judged === undefined) {
    return {
      id,
      title,
      status: 'manual',
      summary: `the inventory declares no kubernetesEndpoint for ${cluster.name}, and the kubeconfig Terraform outputs does not show it: confirm that the Kubernetes endpoint is a Talos Layer 2 virtual IP, or add kubernetesEndpoint to the inventory so the bot can check it`,
      evidence:
        kubeconfigServer === undefined
          ? []
          : [
              kubeconfigServer.ok
                ? `kubeconfig server: ${kubeconfigServer.value ?? '<none>'}`
                : `kubeconfig server unknown (${kubeconfigServer.error})`,
            ],
    };
  }
  const { endpoint, host, source } = judged;
  // Named only when it is not the inventory, so the usual case reads as before.
  const from = judged.observed ? ` (${source})` : '';
  if (host === undefined) {
    const what = judged.observed ? `the kubeconfig server \`${endpoint}\`` : `the inventory's kubernetesEndpoint \`${endpoint}\``;
    return {
      id,
      title,
      status: 'failed',
      summary: `${what} is not a URL such as https://10.0.30.10:6443; correct it`,
      evidence: judged.observed ? judged.evidence : [],
    };
  }
  const owners = new Map<string, string>();
  for (const address of [...cluster.controlPlanes, ...cluster.workers]) owners.set(address, address);
  if (nodes.ok)
    for (const node of nodes.value) for (const address of nodeAddresses(node)) owners.set(address, `${nodeName(node)} (${address})`);
  const evidence = [...judged.evidence, `node addresses: ${list([...owners.keys()].sort())}`];
  if (!nodes.ok) evidence.push(`Kubernetes node addresses unknown (${nodes.error}); compared with the inventory only`);
  const owner = owners.get(host);
  if (owner !== undefined) {
    return {
      id,
      title,
      status: 'failed',
      summary: `${endpoint}${from} is the address of node ${owner}: the API goes down with that node. Use a Talos Layer 2 virtual IP as the Kubernetes endpoint`,
      evidence,
    };
  }
  if (judged.disagreement !== undefined)
    return { id, title, status: 'failed', summary: `${endpoint} is no node's address, but ${judged.disagreement}`, evidence };
  if (isIP(host) === 0) {
    if (controlPlaneVips?.ok === true) evidence.push(...vipEvidence(controlPlaneVips.value));
    return {
      id,
      title,
      status: 'manual',
      summary: `${endpoint}${from} names the host ${host}: confirm that it resolves to the virtual IP, not to a node address`,
      evidence,
    };
  }
  return endpointVipVerdict({ id, title, endpoint: `${endpoint}${from}`, host, evidence }, controlPlaneVips);
}

/** `10.0.30.11`, `10.0.30.11:50000`, `[fd00::11]:50000` → the address. */
function endpointAddress(endpoint: string): string {
  return endpointHost(endpoint) ?? endpoint;
}

/** The virtual IP depends on etcd quorum, so talosctl must know every control-plane address itself. */
export function talosEndpointsGate(
  cluster: ReadinessCluster,
  endpoints: Observed<string[]>,
  nodes: Observed<V1Node[]>,
  kubeconfigServer?: Observed<string | undefined>,
): ReadinessGate {
  const id = 'talosctl-endpoints';
  const title = 'talosctl knows every control-plane address';
  if (!endpoints.ok) return unreadable(id, title, 'the talosconfig endpoints', endpoints.error);
  const known = new Set(endpoints.value.map(endpointAddress));
  const required = new Set(cluster.controlPlanes);
  if (nodes.ok) for (const node of nodes.value.filter(isControlPlane)) for (const address of nodeAddresses(node)) required.add(address);
  const missing = [...required].filter((address) => !known.has(address)).sort();
  const evidence = [
    `talosconfig endpoints: ${endpoints.value.length > 0 ? list(endpoints.value) : '<none>'}`,
    `control-plane addresses: ${list([...required].sort())}`,
  ];
  const vip = endpointVip(cluster, kubeconfigServer);
  if (vip !== undefined && known.has(vip) && !required.has(vip)) {
    evidence.push(`also lists the virtual IP ${vip}, which is unreachable when etcd loses quorum`);
  }
  if (missing.length > 0) {
    return {
      id,
      title,
      status: 'failed',
      summary: `the talosconfig endpoints lack ${list(missing)}: list every control-plane address, since the virtual IP depends on etcd quorum`,
      evidence,
    };
  }
  const all = required.size === 1 ? 'the control-plane address' : `all ${required.size} control-plane addresses`;
  return { id, title, status: 'passed', summary: `the talosconfig lists ${all}`, evidence };
}

/** Workload and Longhorn replica placement read the host label, so every node needs one. */
export function hostLabelGate(cluster: ReadinessCluster, nodes: Observed<V1Node[]>): ReadinessGate {
  const id = 'host-labels';
  const title = 'Every node labelled with its Proxmox host';
  if (!nodes.ok) return unreadable(id, title, 'the Kubernetes nodes', nodes.error);
  if (nodes.value.length === 0) return { id, title, status: 'failed', summary: 'Kubernetes lists no nodes', evidence: [] };
  const evidence = nodes.value.map((n) => `${nodeName(n)}  ${cluster.hostLabel}=${hostOf(n, cluster.hostLabel) ?? '<unset>'}`);
  const unlabelled = nodes.value.filter((n) => hostOf(n, cluster.hostLabel) === undefined).map(nodeName);
  if (unlabelled.length > 0) {
    return {
      id,
      title,
      status: 'failed',
      summary: `${list(unlabelled)} ${unlabelled.length === 1 ? 'lacks' : 'lack'} the ${cluster.hostLabel} label: add it through machine.nodeLabels`,
      evidence,
    };
  }
  const hosts = [...new Set(nodes.value.map((n) => hostOf(n, cluster.hostLabel)!))].sort();
  return {
    id,
    title,
    status: 'passed',
    summary: `${count(nodes.value.length, 'node')} carry ${cluster.hostLabel} (${list(hosts)})`,
    evidence,
  };
}

function hasExtension(extensions: ExtensionInfo[], official: string): boolean {
  const short = official.split('/').pop()!;
  return extensions.some((e) => e.name === short || e.name === official);
}

/** Longhorn needs iSCSI and util-linux tools in the Talos image of every node (ADR 008). */
export function longhornExtensionsGate(cluster: ReadinessCluster, observed: Observed<ExtensionsObserved>): ReadinessGate {
  const id = 'longhorn-extensions';
  const title = 'Longhorn system extensions on every node';
  if (!observed.ok) return unreadable(id, title, 'the system extensions', observed.error);
  const nodes = [...cluster.controlPlanes, ...cluster.workers];
  // Without proxying, talosctl leaves `node` empty; with one node the answer is still that node's.
  const nodeOf = (e: ExtensionInfo): string | undefined => e.node ?? (nodes.length === 1 ? nodes[0] : undefined);
  const problems: string[] = [];
  const evidence: string[] = [];
  for (const node of nodes) {
    const failure = observed.value.nodeErrors.find((e) => e.node === node);
    if (failure !== undefined) {
      problems.push(`${node} did not answer: ${failure.message}`);
      evidence.push(`${node}  error: ${failure.message}`);
      continue;
    }
    const installed = observed.value.extensions.filter((e) => nodeOf(e) === node);
    evidence.push(`${node}  ${installed.length > 0 ? list(installed.map((e) => `${e.name} ${e.version}`)) : '<no extensions>'}`);
    const missing = LONGHORN_EXTENSIONS.filter((official) => !hasExtension(installed, official));
    if (missing.length > 0) problems.push(`${node} lacks ${list(missing)}`);
  }
  if (problems.length > 0) {
    return {
      id,
      title,
      status: 'failed',
      summary: `${problems.join('; ')}. Build the Talos image with ${list(LONGHORN_EXTENSIONS)}`,
      evidence,
    };
  }
  return { id, title, status: 'passed', summary: `${list(LONGHORN_EXTENSIONS)} on all ${count(nodes.length, 'node')}`, evidence };
}

/** Longhorn's privileged helpers need the namespace to enforce the `privileged` Pod Security level. */
export function longhornNamespaceGate(namespace: Observed<V1Namespace | undefined>): ReadinessGate {
  const id = 'longhorn-namespace';
  const title = `${LONGHORN_NAMESPACE} enforces privileged Pod Security`;
  if (!namespace.ok) return unreadable(id, title, `the ${LONGHORN_NAMESPACE} namespace`, namespace.error);
  if (namespace.value === undefined) {
    return { id, title, status: 'failed', summary: `there is no ${LONGHORN_NAMESPACE} namespace: Longhorn is not installed`, evidence: [] };
  }
  const enforce = namespace.value.metadata?.labels?.[ENFORCE_LABEL];
  const evidence = [`${ENFORCE_LABEL}=${enforce ?? '<unset>'}`];
  if (enforce !== 'privileged') {
    return {
      id,
      title,
      status: 'failed',
      summary: `${LONGHORN_NAMESPACE} enforces ${enforce ?? 'the cluster default (baseline on Talos)'}: label it ${ENFORCE_LABEL}=privileged`,
      evidence,
    };
  }
  return { id, title, status: 'passed', summary: `${LONGHORN_NAMESPACE} is labelled ${ENFORCE_LABEL}=privileged`, evidence };
}

const Kustomization = z.object({
  metadata: z.object({ name: z.string(), namespace: z.string().optional() }),
  spec: z.object({ path: z.string().optional() }).optional(),
});

/** `./clusters/production/` → `clusters/production`; the repository root is the empty path. */
function normalizePath(path: string): string {
  return path
    .split('/')
    .filter((part) => part !== '' && part !== '.')
    .join('/');
}

function isUnder(path: string, root: string): boolean {
  const p = normalizePath(path);
  const r = normalizePath(root);
  return r === '' || p === r || p.startsWith(`${r}/`);
}

/** Each cluster reconciles its own Flux tree; a production cluster on the staging path is not production. */
export function fluxPathGate(cluster: ReadinessCluster, kustomizations: Observed<CustomObject[]>): ReadinessGate {
  const id = 'flux-path';
  const title = 'Flux reconciles the cluster path';
  if (!kustomizations.ok) return unreadable(id, title, 'the Flux Kustomizations', kustomizations.error);
  const seen = kustomizations.value.flatMap((object) => {
    const parsed = Kustomization.safeParse(object);
    if (!parsed.success) return [];
    const { metadata, spec } = parsed.data;
    return [{ label: `${metadata.namespace ?? 'default'}/${metadata.name}`, path: spec?.path ?? './' }];
  });
  if (seen.length === 0) {
    return {
      id,
      title,
      status: 'failed',
      summary: `${cluster.name} has no Flux Kustomizations: bootstrap Flux with the cluster's path`,
      evidence: [],
    };
  }
  const evidence = seen.map((k) => `${k.label}  ${k.path}`);
  const paths = [...new Set(seen.map((k) => k.path))].sort();
  if (cluster.fluxPath === undefined) {
    return {
      id,
      title,
      status: 'manual',
      summary: `the inventory declares no fluxPath for ${cluster.name}: confirm that these paths are its own (${list(paths)}), or add fluxPath to the inventory`,
      evidence,
    };
  }
  const root = cluster.fluxPath;
  const outside = seen.filter((k) => !isUnder(k.path, root));
  if (outside.length > 0) {
    return {
      id,
      title,
      status: 'failed',
      summary: `${outside.map((k) => `${k.label} reconciles ${k.path}`).join('; ')}: outside ${root}. Point it at this cluster's path`,
      evidence,
    };
  }
  return { id, title, status: 'passed', summary: `${count(seen.length, 'Kustomization')} reconcile from ${root}`, evidence };
}

function productionShape(cluster: ReadinessCluster, observed: ReadinessObservations): Observed<ClusterShapeSeen> {
  if (!observed.nodes.ok) return { ok: false, error: `the Kubernetes nodes: ${observed.nodes.error}` };
  if (!observed.longhornSettings.ok) return { ok: false, error: `Longhorn's settings: ${observed.longhornSettings.error}` };
  return { ok: true, value: shapeOf(cluster, observed.nodes.value, observed.longhornSettings.value !== undefined) };
}

/** Every gate in the runbook's order, and the verdict: ready when every one passed or was signed off. */
export function evaluateReadiness(cluster: ReadinessCluster, observed: ReadinessObservations): ReadinessReport {
  const manual = manualGates();
  const checked: ReadinessGate[] = [
    controlPlaneTopologyGate(cluster, observed.nodes),
    controlPlaneSchedulingGate(observed.nodes),
    kubernetesEndpointGate(cluster, observed.nodes, observed.kubeconfigServer, observed.controlPlaneVips),
    talosEndpointsGate(cluster, observed.talosEndpoints, observed.nodes, observed.kubeconfigServer),
    hostLabelGate(cluster, observed.nodes),
    observed.workloads === undefined
      ? hostPlacementGate(cluster.hostLabel, observed.nodes, observed.longhornSettings)
      : withWorkloadSpread(
          hostPlacementGate(cluster.hostLabel, observed.nodes, observed.longhornSettings),
          cluster.hostLabel,
          observed.nodes,
          observed.workloads,
        ),
    longhornStorageGate(observed.nodes, observed.longhornNodes, observed.userVolumes),
    longhornExtensionsGate(cluster, observed.extensions),
    longhornNamespaceGate(observed.longhornNamespace),
    fluxPathGate(cluster, observed.kustomizations),
    manual.fluxBootstrap,
    manual.outOfCluster,
    backupSchedulesGate(cluster.name, observed.backups, cluster.schedules?.snapshot),
    rehearsalGate(observed.staging),
    ...(observed.stagingShape === undefined ? [] : [stagingShapeGate(productionShape(cluster, observed), observed.stagingShape.staging)]),
    monitoringGate(observed.monitoring.rules, observed.monitoring.serviceMonitors),
  ];
  const signOffs = observed.signOffs;
  const gates = signOffs === undefined ? checked : applySignOffs(checked, signOffs.given, signOffs.shape, signOffs.now, signOffs.maxAgeMs);
  const counts: Record<GateStatus, number> = { passed: 0, failed: 0, manual: 0, 'signed-off': 0 };
  for (const gate of gates) counts[gate.status] += 1;
  const failed = gates.filter((g) => g.status === 'failed').map((g) => g.title);
  return { cluster: cluster.name, ready: failed.length === 0 && counts.manual === 0, failed, gates, counts };
}
