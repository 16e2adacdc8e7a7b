import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  Observable,
  PolicyV1Api,
  type ConfigurationOptions,
  type RequestContext,
  type ResponseContext,
  type V1Namespace,
  type V1Node,
  type V1Pod,
  type V1PodDisruptionBudget,
} from '@kubernetes/client-node';
import { waitOn } from '../metrics/wait-clock.ts';

/** A Flux or Longhorn custom object as the API returns it; rules validate the parts they read. */
export type CustomObject = Record<string, unknown>;

/** The slice of the Kubernetes API the bot uses, each call bounded by a signal. */
export interface KubeApi {
  listNodes(signal: AbortSignal): Promise<V1Node[]>;
  listPods(signal: AbortSignal): Promise<V1Pod[]>;
  listDisruptionBudgets(signal: AbortSignal): Promise<V1PodDisruptionBudget[]>;
  listKustomizations(signal: AbortSignal): Promise<CustomObject[]>;
  listHelmReleases(signal: AbortSignal): Promise<CustomObject[]>;
  listLonghornVolumes(signal: AbortSignal): Promise<CustomObject[]>;
  getNamespace(name: string, signal: AbortSignal): Promise<V1Namespace | undefined>;
  deleteNode(name: string, signal: AbortSignal): Promise<void>;
}

/** Attaches the caller's signal (the object API takes observable-style middleware) to the request so a hanging API server cannot stall a job. */
function withSignal(signal: AbortSignal): ConfigurationOptions {
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

/** Builds the client from the kubeconfig that `tofu output -raw talos_kubeconfig` printed, TLS settings as given. */
export function createKubeApi(kubeconfig: string): KubeApi {
  return measured(createRawKubeApi(kubeconfig));
}

/** Every call counts as waiting on the cluster, for the bot's own-overhead figure. */
function measured(api: KubeApi): KubeApi {
  const wrapped = {} as Record<string, unknown>;
  for (const [name, fn] of Object.entries(api) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    wrapped[name] = (...args: unknown[]) => waitOn(() => fn(...args));
  }
  return wrapped as unknown as KubeApi;
}

function createRawKubeApi(kubeconfig: string): KubeApi {
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
    listKustomizations: (signal) => listCustom('kustomize.toolkit.fluxcd.io', 'v1', 'kustomizations', signal),
    listHelmReleases: (signal) => listCustom('helm.toolkit.fluxcd.io', 'v2', 'helmreleases', signal),
    listLonghornVolumes: (signal) => listCustom('longhorn.io', 'v1beta2', 'volumes', signal),
    async getNamespace(name, signal) {
      try {
        return await core.readNamespace({ name }, withSignal(signal));
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    async deleteNode(name, signal) {
      try {
        await core.deleteNode({ name }, withSignal(signal));
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
  };
}
