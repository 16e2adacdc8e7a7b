import type {
  ConfigurationOptions,
  RequestContext,
  ResponseContext,
  V1DaemonSet,
  V1Deployment,
  V1Namespace,
  V1Node,
  V1Pod,
  V1PodDisruptionBudget,
  V1StatefulSet,
} from '@kubernetes/client-node';
import { waitOn } from '../time/wait-clock.ts';
import { kubernetesClient, type KubernetesClient } from './client-module.ts';

/** A Flux or Longhorn custom object as the API returns it; rules validate the parts they read. */
export type CustomObject = Record<string, unknown>;

/** The slice of the Kubernetes API the bot uses, each call bounded by a signal. */
export interface KubeApi {
  listNodes(signal: AbortSignal): Promise<V1Node[]>;
  listPods(signal: AbortSignal): Promise<V1Pod[]>;
  listDisruptionBudgets(signal: AbortSignal): Promise<V1PodDisruptionBudget[]>;
  /** Every namespace's Deployments (`apps/v1`). */
  listDeployments(signal: AbortSignal): Promise<V1Deployment[]>;
  /** Every namespace's StatefulSets (`apps/v1`). */
  listStatefulSets(signal: AbortSignal): Promise<V1StatefulSet[]>;
  listKustomizations(signal: AbortSignal): Promise<CustomObject[]>;
  listHelmReleases(signal: AbortSignal): Promise<CustomObject[]>;
  /** `volumes.longhorn.io`; `undefined` when the cluster has no such resource (Longhorn is not installed). */
  listLonghornVolumes(signal: AbortSignal): Promise<CustomObject[] | undefined>;
  /** `replicas.longhorn.io`; `undefined` without Longhorn. */
  listLonghornReplicas(signal: AbortSignal): Promise<CustomObject[] | undefined>;
  /** `engines.longhorn.io`: each attached volume's engine, with its replicas' rebuild progress; `undefined` without Longhorn. */
  listLonghornEngines(signal: AbortSignal): Promise<CustomObject[] | undefined>;
  /** `settings.longhorn.io` (e.g. `node-drain-policy`); `undefined` without Longhorn. */
  listLonghornSettings(signal: AbortSignal): Promise<CustomObject[] | undefined>;
  /** `nodes.longhorn.io`: each storage node's disks and their paths; `undefined` without Longhorn. */
  listLonghornNodes(signal: AbortSignal): Promise<CustomObject[] | undefined>;
  /** `recurringjobs.longhorn.io`: Longhorn's scheduled snapshots and backups; `undefined` without Longhorn. */
  listLonghornRecurringJobs(signal: AbortSignal): Promise<CustomObject[] | undefined>;
  /** `clusters.postgresql.cnpg.io`: CloudNativePG's databases; `undefined` without CloudNativePG. */
  listCnpgClusters(signal: AbortSignal): Promise<CustomObject[] | undefined>;
  /** `scheduledbackups.postgresql.cnpg.io`; `undefined` without CloudNativePG. */
  listCnpgScheduledBackups(signal: AbortSignal): Promise<CustomObject[] | undefined>;
  /** `prometheusrules.monitoring.coreos.com`; `undefined` without prometheus-operator's CRDs. */
  listPrometheusRules(signal: AbortSignal): Promise<CustomObject[] | undefined>;
  /** `servicemonitors.monitoring.coreos.com`; `undefined` without prometheus-operator's CRDs. */
  listServiceMonitors(signal: AbortSignal): Promise<CustomObject[] | undefined>;
  /** One DaemonSet; `undefined` when it does not exist. */
  getDaemonSet(namespace: string, name: string, signal: AbortSignal): Promise<V1DaemonSet | undefined>;
  /** One Deployment; `undefined` when it does not exist. */
  getDeployment(namespace: string, name: string, signal: AbortSignal): Promise<V1Deployment | undefined>;
  getNamespace(name: string, signal: AbortSignal): Promise<V1Namespace | undefined>;
  deleteNode(name: string, signal: AbortSignal): Promise<void>;
  /**
   * Asks Flux to reconcile one Kustomization or HelmRelease now, as `flux reconcile` does: a merge patch
   * of the `reconcile.fluxcd.io/requestedAt` annotation to `token`. The controller copies the token into
   * `status.lastHandledReconcileAt` once it has handled the request.
   */
  requestFluxReconcile(kind: FluxKind, namespace: string, name: string, token: string, signal: AbortSignal): Promise<void>;
  /** Marks the Node unschedulable (`kubectl cordon`), or schedulable again with `false` (`kubectl uncordon`). */
  setUnschedulable(name: string, unschedulable: boolean, signal: AbortSignal): Promise<void>;
  /**
   * Asks the eviction API (policy/v1 Eviction) to evict one pod. `evicted` when the API accepted it
   * or the pod is already gone; `refused` with the API's reason when a disruption budget forbids it
   * now (429 TooManyRequests), so the caller may ask again later. Any other answer throws.
   */
  evictPod(namespace: string, name: string, signal: AbortSignal): Promise<EvictionAnswer>;
}

/** The two Flux kinds whose reconcile the bot may request. */
export type FluxKind = 'Kustomization' | 'HelmRelease';

/** The annotation a reconcile request sets (fluxcd/pkg apis/meta `ReconcileRequestAnnotation`). */
export const RECONCILE_REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';

const FLUX_RESOURCES: Record<FluxKind, { group: string; version: string; plural: string }> = {
  Kustomization: { group: 'kustomize.toolkit.fluxcd.io', version: 'v1', plural: 'kustomizations' },
  HelmRelease: { group: 'helm.toolkit.fluxcd.io', version: 'v2', plural: 'helmreleases' },
};

/** What the eviction API answered for one pod. */
export type EvictionAnswer = { outcome: 'evicted' } | { outcome: 'refused'; reason: string };

/** The API's own words for a refused eviction: its message and the causes (which budget, how many healthy pods). */
function refusalReason(error: unknown): string {
  const body = (error as { body?: unknown }).body;
  let status: { message?: string; details?: { causes?: { message?: string }[] } } = {};
  try {
    status = typeof body === 'string' ? (JSON.parse(body) as typeof status) : ((body ?? {}) as typeof status);
  } catch {
    // A body that is not JSON: only the status code is known.
  }
  const causes = (status.details?.causes ?? []).flatMap((c) => (c.message ? [c.message] : []));
  return [status.message ?? 'TooManyRequests', ...causes].join(': ');
}

/** Attaches the caller's signal (the object API takes observable-style middleware) to the request so a hanging API server cannot stall a job. */
function signalled({ Observable }: KubernetesClient, signal: AbortSignal): ConfigurationOptions {
  return {
    middleware: [
      {
        pre: (context: RequestContext) => {
          context.setSignal(signal);
          return new Observable(Promise.resolve(context));
        },
        post: (context: ResponseContext) => new Observable(Promise.resolve(context)),
      },
    ],
    middlewareMergeStrategy: 'append',
  } as unknown as ConfigurationOptions;
}

function isNotFound(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: number }).code === 404;
}

/** The answer, or `undefined` where the API has no such object or resource type (404). */
async function orUndefined<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** Builds the client from the kubeconfig that `tofu output -raw talos_kubeconfig` printed, TLS settings as given. */
export async function createKubeApi(kubeconfig: string): Promise<KubeApi> {
  return measured(createRawKubeApi(await kubernetesClient(), kubeconfig));
}

/** Every call counts as waiting on the cluster, for the bot's own-overhead figure. */
function measured(api: KubeApi): KubeApi {
  const wrapped = {} as Record<string, unknown>;
  for (const [name, fn] of Object.entries(api) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    wrapped[name] = (...args: unknown[]) => waitOn(() => fn(...args));
  }
  return wrapped as unknown as KubeApi;
}

function createRawKubeApi(client: KubernetesClient, kubeconfig: string): KubeApi {
  const { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, PolicyV1Api, setHeaderOptions } = client;
  const withSignal = (signal: AbortSignal): ConfigurationOptions => signalled(client, signal);
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  // A plain-http server has no TLS to verify; client-node refuses it unless told so.
  if (kc.clusters.some((c) => c.server.startsWith('http://'))) {
    kc.loadFromOptions({
      clusters: kc.clusters.map((c) => (c.server.startsWith('http://') ? { ...c, skipTLSVerify: true } : c)),
      users: kc.users,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
    });
  }
  const core = kc.makeApiClient(CoreV1Api);
  const policy = kc.makeApiClient(PolicyV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const apps = kc.makeApiClient(AppsV1Api);
  const listCustom = async (group: string, version: string, plural: string, signal: AbortSignal): Promise<CustomObject[]> => {
    const list = (await custom.listClusterCustomObject({ group, version, plural }, withSignal(signal))) as { items?: CustomObject[] };
    return list.items ?? [];
  };
  return {
    async listNodes(signal) {
      return (await core.listNode({}, withSignal(signal))).items;
    },
    async listPods(signal) {
      return (await core.listPodForAllNamespaces({}, withSignal(signal))).items;
    },
    async listDisruptionBudgets(signal) {
      return (await policy.listPodDisruptionBudgetForAllNamespaces({}, withSignal(signal))).items;
    },
    async listDeployments(signal) {
      return (await apps.listDeploymentForAllNamespaces({}, withSignal(signal))).items;
    },
    async listStatefulSets(signal) {
      return (await apps.listStatefulSetForAllNamespaces({}, withSignal(signal))).items;
    },
    listKustomizations: (signal) => listCustom('kustomize.toolkit.fluxcd.io', 'v1', 'kustomizations', signal),
    listHelmReleases: (signal) => listCustom('helm.toolkit.fluxcd.io', 'v2', 'helmreleases', signal),
    listLonghornVolumes: (signal) => orUndefined(listCustom('longhorn.io', 'v1beta2', 'volumes', signal)),
    listLonghornReplicas: (signal) => orUndefined(listCustom('longhorn.io', 'v1beta2', 'replicas', signal)),
    listLonghornEngines: (signal) => orUndefined(listCustom('longhorn.io', 'v1beta2', 'engines', signal)),
    listLonghornSettings: (signal) => orUndefined(listCustom('longhorn.io', 'v1beta2', 'settings', signal)),
    listLonghornNodes: (signal) => orUndefined(listCustom('longhorn.io', 'v1beta2', 'nodes', signal)),
    listLonghornRecurringJobs: (signal) => orUndefined(listCustom('longhorn.io', 'v1beta2', 'recurringjobs', signal)),
    listCnpgClusters: (signal) => orUndefined(listCustom('postgresql.cnpg.io', 'v1', 'clusters', signal)),
    listCnpgScheduledBackups: (signal) => orUndefined(listCustom('postgresql.cnpg.io', 'v1', 'scheduledbackups', signal)),
    listPrometheusRules: (signal) => orUndefined(listCustom('monitoring.coreos.com', 'v1', 'prometheusrules', signal)),
    listServiceMonitors: (signal) => orUndefined(listCustom('monitoring.coreos.com', 'v1', 'servicemonitors', signal)),
    getDaemonSet: (namespace, name, signal) => orUndefined(apps.readNamespacedDaemonSet({ namespace, name }, withSignal(signal))),
    getDeployment: (namespace, name, signal) => orUndefined(apps.readNamespacedDeployment({ namespace, name }, withSignal(signal))),
    getNamespace: (name, signal) => orUndefined(core.readNamespace({ name }, withSignal(signal))),
    async deleteNode(name, signal) {
      try {
        await core.deleteNode({ name }, withSignal(signal));
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
    async requestFluxReconcile(kind, namespace, name, token, signal) {
      await custom.patchNamespacedCustomObject(
        { ...FLUX_RESOURCES[kind], namespace, name, body: { metadata: { annotations: { [RECONCILE_REQUESTED_AT]: token } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch, withSignal(signal)),
      );
    },
    async setUnschedulable(name, unschedulable, signal) {
      await core.patchNode(
        { name, body: { spec: { unschedulable: unschedulable ? true : null } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch, withSignal(signal)),
      );
    },
    async evictPod(namespace, name, signal) {
      try {
        await core.createNamespacedPodEviction(
          { name, namespace, body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } } },
          withSignal(signal),
        );
        return { outcome: 'evicted' };
      } catch (error) {
        if (isNotFound(error)) return { outcome: 'evicted' };
        if ((error as { code?: number }).code === 429) return { outcome: 'refused', reason: refusalReason(error) };
        throw error;
      }
    },
  };
}
