/** The workloads a freshly built simulated cluster runs: enough to exercise every gate. */
import { seedMonitoring } from './monitoring-seed.ts';
import { createHash } from 'node:crypto';
import { seedBackupSchedules } from './backup-schedules-seed.ts';
import { cnpgBudgets, seedCnpgClusters, seedCnpgPods } from './cnpg-seed.ts';
import type { ClusterShape, KubeState, PdbState, PodState, SimNode, VolumeState } from './types.ts';

const INSTANCE_MANAGER_IMAGE = 'longhornio/longhorn-instance-manager:v1.10.1';

/** Longhorn names an instance manager `instance-manager-<32 hex>` from its node, image and data engine (longhorn-manager `types.GetInstanceManagerName`). */
export function instanceManagerName(cluster: string, hostname: string): string {
  return `instance-manager-${createHash('md5').update(`${cluster}/${hostname}${INSTANCE_MANAGER_IMAGE}v1`).digest('hex')}`;
}

/** The labels of an instance manager pod, which its budget selects (longhorn-manager `types.GetInstanceManagerLabels`). */
export function instanceManagerLabels(hostname: string): Record<string, string> {
  return {
    'longhorn.io/component': 'instance-manager',
    'longhorn.io/data-engine': 'v1',
    'longhorn.io/instance-manager-image': `imi-${createHash('sha256').update(INSTANCE_MANAGER_IMAGE).digest('hex').slice(0, 8)}`,
    'longhorn.io/instance-manager-type': 'aio',
    'longhorn.io/managed-by': 'longhorn-manager',
    'longhorn.io/node': hostname,
  };
}

/** The pod of a node's instance manager, named as the instance manager and bound to its node. */
export function instanceManagerPodFields(cluster: string, hostname: string): Omit<PodState, 'createdAt'> {
  return {
    name: instanceManagerName(cluster, hostname),
    namespace: 'longhorn-system',
    nodeName: hostname,
    labels: instanceManagerLabels(hostname),
    owner: { kind: 'InstanceManager', name: instanceManagerName(cluster, hostname) },
    image: INSTANCE_MANAGER_IMAGE,
  };
}

/** The budget Longhorn keeps for a running instance manager: same name, `minAvailable: 1` (reference/cluster-facts.md, Longhorn). */
export function instanceManagerPdb(cluster: string, hostname: string): PdbState {
  return {
    name: instanceManagerName(cluster, hostname),
    namespace: 'longhorn-system',
    minAvailable: 1,
    selector: instanceManagerLabels(hostname),
    longhornNode: hostname,
  };
}

const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

/** The random-looking suffixes Kubernetes controllers append, derived from a seed so runs repeat. */
export function nameSuffix(seed: string, length = 5): string {
  const digest = createHash('sha256').update(seed).digest();
  let out = '';
  for (let i = 0; i < length; i++) out += NAME_CHARS[(digest[i] ?? 0) % NAME_CHARS.length];
  return out;
}

interface Workload {
  namespace: string;
  name: string;
  replicas: number;
  image: string;
  labels: Record<string, string>;
  statefulSet?: boolean;
  /** Tolerates the control-plane taint. */
  tolerateControlPlane?: boolean;
}

function workloads(shape: ClusterShape): Workload[] {
  const list: Workload[] = [
    {
      namespace: 'kube-system',
      name: 'coredns',
      replicas: 2,
      image: 'registry.k8s.io/coredns/coredns:v1.12.4',
      labels: { 'k8s-app': 'kube-dns' },
      tolerateControlPlane: true,
    },
    {
      namespace: 'kube-system',
      name: 'cilium-operator',
      replicas: 1,
      image: 'quay.io/cilium/operator-generic:v1.18.4',
      labels: { 'io.cilium/app': 'operator' },
      tolerateControlPlane: true,
    },
    {
      namespace: 'flux-system',
      name: 'source-controller',
      replicas: 1,
      image: 'ghcr.io/fluxcd/source-controller:v1.7.3',
      labels: { app: 'source-controller' },
    },
    {
      namespace: 'flux-system',
      name: 'kustomize-controller',
      replicas: 1,
      image: 'ghcr.io/fluxcd/kustomize-controller:v1.7.2',
      labels: { app: 'kustomize-controller' },
    },
    {
      namespace: 'flux-system',
      name: 'helm-controller',
      replicas: 1,
      image: 'ghcr.io/fluxcd/helm-controller:v1.4.3',
      labels: { app: 'helm-controller' },
    },
    {
      namespace: 'flux-system',
      name: 'notification-controller',
      replicas: 1,
      image: 'ghcr.io/fluxcd/notification-controller:v1.7.4',
      labels: { app: 'notification-controller' },
    },
    { namespace: 'apps', name: 'podinfo', replicas: 2, image: 'ghcr.io/stefanprodan/podinfo:6.9.2', labels: { app: 'podinfo' } },
  ];
  if (shape.longhorn) {
    list.push({
      namespace: 'apps',
      name: 'postgres',
      replicas: 3,
      image: 'ghcr.io/cloudnative-pg/postgresql:17.6',
      labels: { app: 'postgres' },
      statefulSet: true,
    });
  }
  return list;
}

function schedulable(node: SimNode, shape: ClusterShape, tolerateControlPlane: boolean): boolean {
  return node.role === 'worker' || shape.schedulingOnControlPlanes || tolerateControlPlane;
}

/** The Cilium release the simulated clusters run (its agent, operator and HelmRelease). */
const CILIUM_VERSION = '1.18.4';

/** Whether a Cilium release's chart runs Envoy as a separate DaemonSet (from 1.16). */
function ciliumRunsEnvoyDaemonSet(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 1 || (major === 1 && minor >= 16);
}

/** The pods that belong to one node: its DaemonSet pods, Longhorn's instance manager and, on a control plane, the static pods. */
export function nodePods(shape: ClusterShape, node: SimNode, createdAt: number): PodState[] {
  const pods: PodState[] = [];
  const pod = (p: Omit<PodState, 'createdAt'>): void => {
    pods.push({ ...p, createdAt });
  };
  pod({
    name: `cilium-${nameSuffix(`${shape.name}/cilium/${node.hostname}`)}`,
    namespace: 'kube-system',
    nodeName: node.hostname,
    labels: { 'k8s-app': 'cilium' },
    owner: { kind: 'DaemonSet', name: 'cilium' },
    image: `quay.io/cilium/cilium:v${CILIUM_VERSION}`,
  });
  // cilium/cilium install/kubernetes (chart ≥ 1.16): `envoy.enabled` defaults to true, so Envoy
  // runs as its own DaemonSet kube-system/cilium-envoy (label k8s-app=cilium-envoy) on every node.
  if (ciliumRunsEnvoyDaemonSet(CILIUM_VERSION)) {
    pod({
      name: `cilium-envoy-${nameSuffix(`${shape.name}/cilium-envoy/${node.hostname}`)}`,
      namespace: 'kube-system',
      nodeName: node.hostname,
      labels: { 'k8s-app': 'cilium-envoy' },
      owner: { kind: 'DaemonSet', name: 'cilium-envoy' },
      image: 'quay.io/cilium/cilium-envoy:v1.34.10',
    });
  }
  if (shape.longhorn && node.longhorn) {
    pod({
      name: `longhorn-manager-${nameSuffix(`${shape.name}/longhorn-manager/${node.hostname}`)}`,
      namespace: 'longhorn-system',
      nodeName: node.hostname,
      labels: { app: 'longhorn-manager' },
      owner: { kind: 'DaemonSet', name: 'longhorn-manager' },
      image: 'longhornio/longhorn-manager:v1.10.1',
    });
    pod(instanceManagerPodFields(shape.name, node.hostname));
  }
  if (node.role === 'controlplane') {
    for (const component of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) {
      pod({
        name: `${component}-${node.hostname}`,
        namespace: 'kube-system',
        nodeName: node.hostname,
        labels: { 'k8s-app': component, tier: 'control-plane' },
        owner: { kind: 'Node', name: node.hostname },
        image: `registry.k8s.io/${component}:${shape.kubernetesVersion}`,
        mirror: true,
      });
    }
  }
  return pods;
}

/**
 * A pod created on its own in `namespace` on node `hostname` (no owner references, as `kubectl run`
 * makes one): nothing recreates it, and a drain leaves it where it is. For a fault such as
 * `podsCrashLooping`, its workload is its own name.
 */
export function barePod(namespace: string, name: string, hostname: string, image: string, createdAt: number): PodState {
  return { name, namespace, nodeName: hostname, labels: { run: name }, owner: { kind: 'None', name }, image, createdAt };
}

/**
 * One pod of a Deployment `workload` in `namespace` on node `hostname`, owned by its ReplicaSet as
 * the seeded workloads are, with no disruption budget: a drain evicts it and the ReplicaSet
 * recreates it on another node under a new name.
 */
export function deploymentPod(
  clusterName: string,
  namespace: string,
  workload: string,
  hostname: string,
  image: string,
  createdAt: number,
): PodState {
  const replicaSet = `${workload}-${nameSuffix(`${clusterName}/${workload}/rs`, 10)}`;
  return {
    name: `${replicaSet}-${nameSuffix(`${clusterName}/${workload}/0`)}`,
    namespace,
    nodeName: hostname,
    labels: { app: workload },
    owner: { kind: 'ReplicaSet', name: replicaSet },
    image,
    createdAt,
  };
}

export function seedKube(shape: ClusterShape, nodes: SimNode[], createdAt: number): KubeState {
  const pods: PodState[] = [];
  const pod = (p: Omit<PodState, 'createdAt'>): void => {
    pods.push({ ...p, createdAt });
  };
  for (const node of nodes) pods.push(...nodePods(shape, node, createdAt));
  let placement = 0;
  for (const w of workloads(shape)) {
    const candidates = nodes.filter((n) => schedulable(n, shape, w.tolerateControlPlane ?? false));
    const replicaSet = `${w.name}-${nameSuffix(`${shape.name}/${w.name}/rs`, 10)}`;
    for (let i = 0; i < w.replicas; i++) {
      const node = candidates[(placement + i) % Math.max(1, candidates.length)];
      pod({
        name: w.statefulSet ? `${w.name}-${i + 1}` : `${replicaSet}-${nameSuffix(`${shape.name}/${w.name}/${i}`)}`,
        namespace: w.namespace,
        nodeName: node?.hostname ?? '',
        labels: { ...w.labels },
        owner: w.statefulSet ? { kind: 'StatefulSet', name: w.name } : { kind: 'ReplicaSet', name: replicaSet },
        image: w.image,
      });
    }
    placement += w.replicas;
  }
  pods.push(...seedCnpgPods(shape, nodes, createdAt));
  const namespaceList: { name: string; labels: Record<string, string> }[] = [
    { name: 'default', labels: {} },
    { name: 'kube-system', labels: {} },
    { name: 'kube-public', labels: {} },
    { name: 'kube-node-lease', labels: {} },
    { name: 'flux-system', labels: {} },
    { name: 'apps', labels: {} },
    ...(shape.longhorn ? [{ name: 'longhorn-system', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } }] : []),
  ];
  const namespaces = namespaceList.map((ns) => ({ name: ns.name, labels: { 'kubernetes.io/metadata.name': ns.name, ...ns.labels } }));
  const revision = `main@sha1:${createHash('sha1').update(shape.name).digest('hex')}`;
  const longhornNodes = nodes.filter((n) => n.longhorn).map((n) => n.hostname);
  return {
    namespaces,
    pods,
    pdbs: [
      { name: 'podinfo', namespace: 'apps', minAvailable: 1, selector: { app: 'podinfo' } },
      ...(shape.longhorn ? [{ name: 'postgres', namespace: 'apps', minAvailable: 2, selector: { app: 'postgres' } }] : []),
      ...(shape.longhorn ? longhornNodes.map((hostname) => instanceManagerPdb(shape.name, hostname)) : []),
      ...cnpgBudgets(shape),
    ],
    flux: [
      { kind: 'Kustomization', name: 'flux-system', namespace: 'flux-system', path: shape.fluxPath, generation: 1, revision },
      { kind: 'Kustomization', name: 'apps', namespace: 'flux-system', path: `${shape.fluxPath}/apps`, generation: 3, revision },
      {
        kind: 'HelmRelease',
        name: 'cilium',
        namespace: 'kube-system',
        chart: 'cilium',
        chartVersion: '1.18.4',
        generation: 2,
        revision: '1.18.4',
      },
      {
        kind: 'HelmRelease',
        name: 'podinfo',
        namespace: 'apps',
        chart: 'podinfo',
        chartVersion: '6.9.2',
        generation: 1,
        revision: '6.9.2',
      },
      ...(shape.longhorn
        ? [
            {
              kind: 'HelmRelease' as const,
              name: 'longhorn',
              namespace: 'longhorn-system',
              chart: 'longhorn',
              chartVersion: '1.10.1',
              generation: 1,
              revision: '1.10.1',
            },
          ]
        : []),
    ],
    volumes: shape.longhorn
      ? [1, 2, 3]
          .map((i): VolumeState => ({
            name: `pvc-${uuidFrom(`${shape.name}/postgres-${i}`)}`,
            pvcName: `postgres-${i}`,
            namespace: 'apps',
            replicas: longhornNodes,
            sizeBytes: 10 * 1024 ** 3,
            attachedTo: pods.find((p) => p.name === `postgres-${i}`)?.nodeName ?? '',
          }))
          .concat([
            // A volume no workload mounts right now (a scaled-down archive): real clusters have some.
            {
              name: `pvc-${uuidFrom(`${shape.name}/archive`)}`,
              pvcName: 'archive',
              namespace: 'apps',
              replicas: longhornNodes,
              sizeBytes: 50 * 1024 ** 3,
              attachedTo: '',
              detached: true,
            },
          ])
      : [],
    longhornSettings: shape.longhorn ? { 'node-drain-policy': 'block-if-contains-last-replica' } : {},
    cnpg: seedCnpgClusters(shape),
    ...seedBackupSchedules(shape),
    monitoring: seedMonitoring(),
    resourceVersion: 1000,
  };
}

export function uuidFrom(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
