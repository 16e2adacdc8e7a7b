/** One plain-HTTP Kubernetes API server per simulated cluster, with bearer-token auth. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { controlPlanes, kubeApiAvailability } from './cluster-model.ts';
import {
  renderCnpgCluster,
  renderDaemonSets,
  renderDeployments,
  renderStatefulSets,
  renderEngine,
  renderNamespace,
  renderNode,
  renderPdb,
  renderPod,
  renderReplicas,
  renderLonghornNodes,
  renderSettings,
  renderVolume,
  type Json,
} from './kube-objects.ts';
import { renderPrometheusRules, renderServiceMonitors } from './monitoring.ts';
import { renderRecurringJobs, renderScheduledBackups } from './backup-schedules.ts';
import { RECONCILE_REQUESTED_AT, renderFlux, requestReconcile } from './flux-objects.ts';
import type { Lifecycle } from './lifecycle.ts';
import { bare } from './versions.ts';
import { answerEviction, unschedulableFromPatch } from './eviction.ts';
import type { Recorder } from './recorder.ts';
import type { SimCluster, SimState, SimTiming } from './types.ts';

interface ResourceType {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** Built-in list items carry no apiVersion/kind; custom resources do. */
  builtin: boolean;
  /** Whether the cluster serves this type (its CRD is installed); default always. */
  served?: (cluster: SimCluster) => boolean;
  list(cluster: SimCluster, now: number): Json[];
}

export interface KubeApiDeps {
  state: SimState;
  timing: SimTiming;
  lifecycle: Lifecycle;
  recorder: Recorder;
}

function types(deps: KubeApiDeps): ResourceType[] {
  return [
    {
      group: '',
      version: 'v1',
      plural: 'nodes',
      kind: 'Node',
      namespaced: false,
      builtin: true,
      list: (c, now) => c.nodes.filter((n) => n.k8sRegistered).map((n) => renderNode(c, n, now)),
    },
    {
      group: '',
      version: 'v1',
      plural: 'pods',
      kind: 'Pod',
      namespaced: true,
      builtin: true,
      list: (c) => c.kube.pods.map((p) => renderPod(c, p)),
    },
    {
      group: '',
      version: 'v1',
      plural: 'namespaces',
      kind: 'Namespace',
      namespaced: false,
      builtin: true,
      list: (c) => c.kube.namespaces.map((n) => renderNamespace(c, n)),
    },
    {
      group: 'policy',
      version: 'v1',
      plural: 'poddisruptionbudgets',
      kind: 'PodDisruptionBudget',
      namespaced: true,
      builtin: true,
      list: (c, now) => c.kube.pdbs.map((p) => renderPdb(c, p, now)),
    },
    {
      group: 'kustomize.toolkit.fluxcd.io',
      version: 'v1',
      plural: 'kustomizations',
      kind: 'Kustomization',
      namespaced: true,
      builtin: false,
      list: (c, now) => c.kube.flux.filter((f) => f.kind === 'Kustomization').map((f) => renderFlux(c, f, now)),
    },
    {
      group: 'helm.toolkit.fluxcd.io',
      version: 'v2',
      plural: 'helmreleases',
      kind: 'HelmRelease',
      namespaced: true,
      builtin: false,
      list: (c, now) => c.kube.flux.filter((f) => f.kind === 'HelmRelease').map((f) => renderFlux(c, f, now)),
    },
    {
      group: 'apps',
      version: 'v1',
      plural: 'daemonsets',
      kind: 'DaemonSet',
      namespaced: true,
      builtin: true,
      list: (c) => renderDaemonSets(c),
    },
    {
      group: 'apps',
      version: 'v1',
      plural: 'deployments',
      kind: 'Deployment',
      namespaced: true,
      builtin: true,
      list: (c, now) => renderDeployments(c, now),
    },
    {
      group: 'apps',
      version: 'v1',
      plural: 'statefulsets',
      kind: 'StatefulSet',
      namespaced: true,
      builtin: true,
      list: (c) => renderStatefulSets(c),
    },
    // Longhorn's CRDs exist only where Longhorn is installed; elsewhere the API answers 404.
    {
      group: 'longhorn.io',
      version: 'v1beta2',
      plural: 'volumes',
      kind: 'Volume',
      namespaced: true,
      builtin: false,
      served: (c) => c.shape.longhorn,
      list: (c, now) => c.kube.volumes.map((v) => renderVolume(c, deps.state, v, deps.timing, now)),
    },
    {
      group: 'longhorn.io',
      version: 'v1beta2',
      plural: 'replicas',
      kind: 'Replica',
      namespaced: true,
      builtin: false,
      served: (c) => c.shape.longhorn,
      list: (c, now) => c.kube.volumes.flatMap((v) => renderReplicas(c, deps.state, v, deps.timing, now)),
    },
    {
      group: 'longhorn.io',
      version: 'v1beta2',
      plural: 'engines',
      kind: 'Engine',
      namespaced: true,
      builtin: false,
      served: (c) => c.shape.longhorn,
      list: (c, now) => c.kube.volumes.map((v) => renderEngine(c, deps.state, v, deps.timing, now)),
    },
    // CloudNativePG's CRD exists where the cluster runs a CloudNativePG database.
    {
      group: 'postgresql.cnpg.io',
      version: 'v1',
      plural: 'clusters',
      kind: 'Cluster',
      namespaced: true,
      builtin: false,
      served: (c) => (c.shape.cnpg ?? []).length > 0,
      list: (c, now) => (c.kube.cnpg ?? []).map((db) => renderCnpgCluster(c, db, now)),
    },
    {
      group: 'longhorn.io',
      version: 'v1beta2',
      plural: 'settings',
      kind: 'Setting',
      namespaced: true,
      builtin: false,
      served: (c) => c.shape.longhorn,
      list: (c) => renderSettings(c),
    },
    {
      group: 'longhorn.io',
      version: 'v1beta2',
      plural: 'recurringjobs',
      kind: 'RecurringJob',
      namespaced: true,
      builtin: false,
      served: (c) => c.shape.longhorn,
      list: (c) => renderRecurringJobs(c),
    },
    {
      group: 'monitoring.coreos.com',
      version: 'v1',
      plural: 'prometheusrules',
      kind: 'PrometheusRule',
      namespaced: true,
      builtin: false,
      served: (c) => c.kube.monitoring !== undefined,
      list: (c) => renderPrometheusRules(c),
    },
    {
      group: 'monitoring.coreos.com',
      version: 'v1',
      plural: 'servicemonitors',
      kind: 'ServiceMonitor',
      namespaced: true,
      builtin: false,
      served: (c) => c.kube.monitoring !== undefined,
      list: (c) => renderServiceMonitors(c),
    },
    {
      group: 'postgresql.cnpg.io',
      version: 'v1',
      plural: 'scheduledbackups',
      kind: 'ScheduledBackup',
      namespaced: true,
      builtin: false,
      served: (c) => (c.shape.cnpg ?? []).length > 0,
      list: (c) => renderScheduledBackups(c),
    },
    {
      group: 'longhorn.io',
      version: 'v1beta2',
      plural: 'nodes',
      kind: 'Node',
      namespaced: true,
      builtin: false,
      served: (c) => c.shape.longhorn,
      list: (c) => renderLonghornNodes(c),
    },
  ];
}

function status(code: number, reason: string, message: string, details: Json = {}): Json {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: code < 400 ? 'Success' : 'Failure', message, reason, details, code };
}

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function field(item: Json, path: string): string | undefined {
  let value: unknown = item;
  for (const part of path.split('.')) value = value && typeof value === 'object' ? (value as Json)[part] : undefined;
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
}

/** fieldSelector `a.b=c,d!=e` and labelSelector `k=v,k` (the subset clients use here). */
function selected(item: Json, fieldSelector: string | null, labelSelector: string | null): boolean {
  for (const term of (fieldSelector ?? '').split(',').filter(Boolean)) {
    const m = /^([^!=]+)(!=|==|=)(.*)$/.exec(term);
    if (!m) continue;
    const actual = field(item, m[1] ?? '') ?? '';
    if (m[2] === '!=' ? actual === m[3] : actual !== m[3]) return false;
  }
  const labels = ((item['metadata'] as Json | undefined)?.['labels'] ?? {}) as Record<string, string>;
  for (const term of (labelSelector ?? '').split(',').filter(Boolean)) {
    const m = /^([^!=]+)(!=|==|=)?(.*)$/.exec(term);
    if (!m) continue;
    const key = m[1] ?? '';
    if (!m[2] && !(key in labels)) return false;
    if ((m[2] === '=' || m[2] === '==') && labels[key] !== m[3]) return false;
    if (m[2] === '!=' && labels[key] === m[3]) return false;
  }
  return true;
}

function nameOf(item: Json): { name: string; namespace?: string } {
  const metadata = item['metadata'] as { name: string; namespace?: string };
  return metadata;
}

export async function startKubeApi(deps: KubeApiDeps, clusterName: string): Promise<{ server: Server; port: number }> {
  const resourceTypes = types(deps);
  const server = createServer((req, res) => {
    const cluster = deps.state.clusters[clusterName];
    if (!cluster) {
      req.socket.destroy();
      return;
    }
    handle(cluster, deps, resourceTypes, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

function handle(cluster: SimCluster, deps: KubeApiDeps, resourceTypes: ResourceType[], req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const path = url.pathname;
  // No kube-apiserver is running: the endpoint refuses the connection.
  if (kubeApiAvailability(cluster) === 'down') {
    req.socket.destroy();
    return;
  }
  if (req.headers.authorization !== `Bearer ${cluster.credentials.token}`) {
    send(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
    return;
  }
  if ((cluster.faults.kubeHang ?? []).some((p) => path.startsWith(p))) return;
  if ((cluster.faults.kubeFail ?? []).some((p) => path.startsWith(p))) {
    send(
      res,
      500,
      status(500, 'InternalError', 'Internal error occurred: etcdserver: request timed out', {
        causes: [{ message: 'etcdserver: request timed out' }],
      }),
    );
    return;
  }
  const now = Date.now();
  if (path === '/version') {
    const version =
      controlPlanes(cluster)
        .map((n) => n.components?.apiserver ?? n.kubeletVersion)
        .sort((a, b) => bare(a).localeCompare(bare(b), undefined, { numeric: true }))[0] ?? 'v0.0.0';
    const [major = '1', minor = '0'] = bare(version).split('.');
    send(res, 200, {
      major,
      minor,
      gitVersion: version,
      gitCommit: '0d7d4a7ad5bd0e5a1eb4e4c2f1c6ea8fb1e5d3c1',
      gitTreeState: 'clean',
      buildDate: '2025-09-09T19:34:48Z',
      goVersion: 'go1.24.6',
      compiler: 'gc',
      platform: 'linux/amd64',
    });
    return;
  }
  if (kubeApiAvailability(cluster) === 'no-quorum') {
    send(res, 500, status(500, 'InternalError', 'Internal error occurred: etcdserver: request timed out'));
    return;
  }
  const segments = path.split('/').filter(Boolean);
  let group: string;
  let version: string;
  let rest: string[];
  if (segments[0] === 'api' && segments[1] === 'v1') {
    group = '';
    version = 'v1';
    rest = segments.slice(2);
  } else if (segments[0] === 'apis' && segments.length >= 3) {
    group = segments[1] ?? '';
    version = segments[2] ?? '';
    rest = segments.slice(3);
  } else {
    send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
    return;
  }
  let namespace: string | undefined;
  let plural = rest[0];
  let name = rest[1];
  let subresource: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    plural = rest[2];
    name = rest[3];
    subresource = rest[4];
  }
  const type = resourceTypes.find(
    (t) => t.group === group && t.version === version && t.plural === plural && (t.served?.(cluster) ?? true),
  );
  if (!type || (namespace !== undefined && !type.namespaced) || rest.length > (namespace ? 5 : 2)) {
    send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
    return;
  }
  const apiVersion = group ? `${group}/${version}` : version;
  const items = type.list(cluster, now).filter((i) => namespace === undefined || nameOf(i).namespace === namespace);
  if (name === undefined) {
    if (req.method !== 'GET') {
      send(res, 405, status(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`));
      return;
    }
    const filtered = items.filter((i) => selected(i, url.searchParams.get('fieldSelector'), url.searchParams.get('labelSelector')));
    send(res, 200, {
      apiVersion,
      kind: `${type.kind}List`,
      metadata: { resourceVersion: String(cluster.kube.resourceVersion) },
      items: type.builtin ? filtered : filtered.map((i) => ({ apiVersion, kind: type.kind, ...i })),
    });
    return;
  }
  const item = items.find((i) => nameOf(i).name === name);
  const notFound = (): void =>
    send(
      res,
      404,
      status(404, 'NotFound', `${type.plural}${group ? `.${group}` : ''} ${JSON.stringify(name)} not found`, {
        name,
        ...(group ? { group } : {}),
        kind: type.plural,
      }),
    );
  if (!item) {
    notFound();
    return;
  }
  if (subresource === 'eviction' && type.plural === 'pods' && req.method === 'POST') {
    void readJson(req).then((body) => {
      const answer = answerEviction(cluster, namespace ?? '', name, body, Date.now(), (hostname) => {
        const node = cluster.nodes.find((n) => n.hostname === hostname);
        if (node) deps.lifecycle.reconcileCordoned(cluster, node);
      });
      if (answer.evicted !== undefined)
        deps.recorder.event({ cluster: cluster.name, node: addressOf(cluster, item), kind: 'pod-evicted', detail: answer.evicted });
      if (answer.refusedBy !== undefined)
        deps.recorder.event({
          cluster: cluster.name,
          node: addressOf(cluster, item),
          kind: 'eviction-refused',
          detail: `${namespace}/${name} by ${answer.refusedBy}`,
        });
      send(res, answer.code, answer.body);
    });
    return;
  }
  if (req.method === 'PATCH' && type.group === '' && type.plural === 'nodes' && subresource === undefined) {
    void readJson(req).then((body) => {
      const node = cluster.nodes.find((n) => n.hostname === name);
      const unschedulable = unschedulableFromPatch(body);
      if (!node || unschedulable === 'invalid') {
        send(res, 422, status(422, 'Invalid', 'the simulated API takes only spec.unschedulable in a Node patch'));
        return;
      }
      if (unschedulable) deps.lifecycle.cordonByApi(cluster, node);
      else deps.lifecycle.uncordon(cluster, node);
      cluster.kube.resourceVersion++;
      deps.recorder.event({
        cluster: cluster.name,
        node: node.address,
        kind: unschedulable ? 'cordoned' : 'uncordoned',
        detail: node.hostname,
      });
      send(res, 200, { apiVersion, kind: type.kind, ...(type.list(cluster, Date.now()).find((i) => nameOf(i).name === name) ?? item) });
    });
    return;
  }
  if (req.method === 'PATCH' && (type.plural === 'kustomizations' || type.plural === 'helmreleases') && subresource === undefined) {
    void readJson(req).then((body) => {
      const obj = cluster.kube.flux.find((f) => f.kind === type.kind && f.name === name && f.namespace === namespace);
      const token = requestedAtFromPatch(body);
      if (!obj || token === undefined) {
        send(
          res,
          422,
          status(422, 'Invalid', `the simulated API takes only metadata.annotations["${RECONCILE_REQUESTED_AT}"] in a Flux patch`),
        );
        return;
      }
      const now = Date.now();
      requestReconcile(cluster, obj, token, now, deps.timing.fluxReconcileMs);
      cluster.kube.resourceVersion++;
      deps.recorder.event({
        cluster: cluster.name,
        kind: 'flux-reconcile-requested',
        detail: `${type.kind} ${namespace}/${name} ${token}`,
      });
      send(res, 200, { apiVersion, kind: type.kind, ...renderFlux(cluster, obj, now) });
    });
    return;
  }
  if (subresource !== undefined) {
    notFound();
    return;
  }
  if (req.method === 'DELETE' && type.group === '' && type.plural === 'nodes') {
    req.resume();
    const node = cluster.nodes.find((n) => n.hostname === name);
    if (node) deps.lifecycle.deleteKubeNode(cluster, node);
    cluster.kube.resourceVersion++;
    send(res, 200, status(200, '', '', { name, kind: 'nodes', uid: (item['metadata'] as Json)['uid'] }));
    return;
  }
  if (req.method !== 'GET') {
    send(res, 405, status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'));
    return;
  }
  send(res, 200, { apiVersion, kind: type.kind, ...item });
}

/** The value of a merge patch that sets only the reconcile-request annotation; `undefined` for anything else. */
function requestedAtFromPatch(body: Json | undefined): string | undefined {
  const metadata = body?.['metadata'] as Json | undefined;
  const annotations = metadata?.['annotations'] as Json | undefined;
  if (body === undefined || Object.keys(body).length !== 1 || metadata === undefined || Object.keys(metadata).length !== 1)
    return undefined;
  if (annotations === undefined || Object.keys(annotations).length !== 1) return undefined;
  const token = annotations[RECONCILE_REQUESTED_AT];
  return typeof token === 'string' && token !== '' ? token : undefined;
}

/** The address of the node a pod item runs on, for the recorder. */
function addressOf(cluster: SimCluster, pod: Json): string | undefined {
  const nodeName = (pod['spec'] as Json | undefined)?.['nodeName'];
  return cluster.nodes.find((n) => n.hostname === nodeName)?.address;
}

/** The request body as JSON; `undefined` when empty or not JSON (the handler answers on what it has). */
function readJson(req: IncomingMessage): Promise<Json | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve(text === '' ? undefined : (JSON.parse(text) as Json));
      } catch {
        resolve(undefined);
      }
    });
  });
}
