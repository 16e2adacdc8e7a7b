/** Kubernetes JSON as the API server returns it, rendered from the simulator state on every read. */
import { createHash } from 'node:crypto';
import { isCordoned, named, nodeReady, type ReadyStatus } from './cluster-model.ts';
import { nameSuffix, uuidFrom } from './kube-seed.ts';
import { CNPG_IMAGE } from './cnpg-seed.ts';
import { instancesOf } from './cnpg.ts';
import { attachedNode, drainPolicy, isHealthyReplica, rebuildView, replicaView, volumePod, volumeView } from './longhorn.ts';
import type {
  CnpgClusterState,
  NamespaceState,
  PdbState,
  PodState,
  SimCluster,
  SimNode,
  SimState,
  SimTiming,
  VolumeState,
} from './types.ts';

export type Json = Record<string, unknown>;

export function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function resourceVersion(seed: string): string {
  return String(10_000 + (createHash('sha1').update(seed).digest().readUInt32BE(0) % 900_000));
}

export function meta(
  cluster: SimCluster,
  kind: string,
  name: string,
  namespace: string | undefined,
  createdAt: number,
  extra: Json = {},
): Json {
  return {
    name,
    ...(namespace ? { namespace } : {}),
    uid: uuidFrom(`${cluster.name}/${kind}/${namespace ?? ''}/${name}`),
    resourceVersion: resourceVersion(`${cluster.name}/${kind}/${name}/${cluster.kube.resourceVersion}`),
    creationTimestamp: timestamp(createdAt),
    ...extra,
  };
}

function nodeByHostname(cluster: SimCluster, hostname: string): SimNode | undefined {
  return cluster.nodes.find((n) => n.hostname === hostname);
}

function kernelFor(talosVersion: string): string {
  const minor = Number(talosVersion.replace(/^v/, '').split('.')[1] ?? 0);
  return minor >= 12 ? '6.18.2-talos' : minor === 11 ? '6.12.57-talos' : '6.12.40-talos';
}

export function renderNode(cluster: SimCluster, node: SimNode, now: number): Json {
  const ready = nodeReady(cluster, node);
  const hostLabel = cluster.shape.hostLabel ?? 'example.org/proxmox-host';
  const cp = node.role === 'controlplane';
  const taints: Json[] = [];
  if (cp && !cluster.shape.schedulingOnControlPlanes) taints.push({ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' });
  if (isCordoned(cluster, node))
    taints.push({ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule', timeAdded: timestamp(now - 1000) });
  if (ready === 'Unknown') {
    taints.push({ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule', timeAdded: timestamp(now - 1000) });
    taints.push({ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', timeAdded: timestamp(now - 1000) });
  } else if (ready === 'False') {
    taints.push({ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule', timeAdded: timestamp(now - 1000) });
    taints.push({ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute', timeAdded: timestamp(now - 1000) });
  }
  const index = cluster.nodes.indexOf(node);
  // A failed machine's kubelet last posted its status just before the failure.
  const lastPosted = node.failedAt ?? Math.min(now, node.bootedAt + 60_000);
  const heartbeat = ready === 'Unknown' ? timestamp(lastPosted) : timestamp(now - 5000);
  const pressure = (type: string, reason: string, message: string): Json => ({
    type,
    status: ready === 'Unknown' ? 'Unknown' : 'False',
    lastHeartbeatTime: heartbeat,
    lastTransitionTime: timestamp(node.bootedAt),
    reason: ready === 'Unknown' ? 'NodeStatusUnknown' : reason,
    message: ready === 'Unknown' ? 'Kubelet stopped posting node status.' : message,
  });
  const readyCondition: Record<ReadyStatus, Json> = {
    True: { reason: 'KubeletReady', message: 'kubelet is posting ready status' },
    False: {
      reason: 'KubeletNotReady',
      message:
        'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized',
    },
    Unknown: { reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.' },
  };
  const memory = `${node.memoryMiB * 1024}Ki`;
  return {
    metadata: meta(cluster, 'Node', node.hostname, undefined, cluster.createdAt + index * 60_000, {
      labels: {
        'beta.kubernetes.io/arch': node.arch ?? 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'kubernetes.io/arch': node.arch ?? 'amd64',
        'kubernetes.io/hostname': node.hostname,
        'kubernetes.io/os': 'linux',
        ...(cp ? { 'node-role.kubernetes.io/control-plane': '', 'node.kubernetes.io/exclude-from-external-load-balancers': '' } : {}),
        [hostLabel]: node.host,
      },
      annotations: {
        'node.alpha.kubernetes.io/ttl': '0',
        'talos.dev/owned-labels': JSON.stringify([hostLabel]),
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
      },
    }),
    spec: {
      podCIDR: `10.244.${index}.0/24`,
      podCIDRs: [`10.244.${index}.0/24`],
      ...(isCordoned(cluster, node) ? { unschedulable: true } : {}),
      ...(taints.length > 0 ? { taints } : {}),
    },
    status: {
      capacity: { cpu: cp ? '4' : '8', 'ephemeral-storage': '101430960Ki', memory, pods: '110' },
      allocatable: { cpu: cp ? '3950m' : '7950m', 'ephemeral-storage': '93478772582', memory, pods: '110' },
      conditions: [
        pressure('MemoryPressure', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
        pressure('DiskPressure', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        pressure('PIDPressure', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        {
          type: 'Ready',
          status: ready,
          lastHeartbeatTime: heartbeat,
          lastTransitionTime: timestamp(ready === 'True' ? node.lastUpAt : now - 1000),
          ...readyCondition[ready],
        },
      ],
      addresses: [
        { type: 'InternalIP', address: node.address },
        { type: 'Hostname', address: node.hostname },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: createHash('md5').update(`${cluster.name}/${node.hostname}`).digest('hex'),
        systemUUID: uuidFrom(`${cluster.name}/${node.hostname}/system`),
        bootID: node.bootId,
        kernelVersion: kernelFor(node.talosVersion),
        osImage: `Talos (${node.talosVersion})`,
        containerRuntimeVersion: 'containerd://2.1.5',
        kubeletVersion: node.kubeletVersion,
        kubeProxyVersion: '',
        operatingSystem: 'linux',
        architecture: node.arch ?? 'amd64',
      },
    },
  };
}

/** The Deployment, StatefulSet or DaemonSet a pod belongs to: a ReplicaSet's name less its hash. */
export function workloadOf(pod: PodState): string {
  return pod.owner.kind === 'ReplicaSet' ? pod.owner.name.replace(/-[a-z0-9]{10}$/, '') : pod.owner.name;
}

/** A pod whose readiness probe fails by a fault: `podsNotReady` names its workload, `ciliumAgentNotReady` and `ciliumEnvoyNotReady` its node. */
function probeFails(cluster: SimCluster, pod: PodState, node: SimNode): boolean {
  if ((cluster.faults.podsNotReady ?? []).includes(workloadOf(pod))) return true;
  if (pod.owner.kind === 'DaemonSet' && pod.owner.name === 'cilium-envoy' && named(cluster.faults.ciliumEnvoyNotReady, node)) return true;
  return pod.owner.kind === 'DaemonSet' && pod.owner.name === 'cilium' && named(cluster.faults.ciliumAgentNotReady, node);
}

/** A pod whose container keeps exiting by a fault (`podsCrashLooping` names its workload): the kubelet backs off restarting it. */
function crashLooping(cluster: SimCluster, pod: PodState): boolean {
  return (cluster.faults.podsCrashLooping ?? []).includes(workloadOf(pod));
}

export function podReady(cluster: SimCluster, pod: PodState): boolean {
  const node = nodeByHostname(cluster, pod.nodeName);
  return node !== undefined && nodeReady(cluster, node) === 'True' && !probeFails(cluster, pod, node) && !crashLooping(cluster, pod);
}

/**
 * The container status of a crash-looping container as the kubelet writes it (kuberuntime_manager.go
 * `doBackOff`, kubelet_pods.go `convertToAPIContainerStatuses`): waiting in CrashLoopBackOff with the
 * back-off message, the last run terminated with its exit code, and the restarts counted. The pod's
 * phase stays Running (restartPolicy Always).
 */
function crashLoopStatus(cluster: SimCluster, pod: PodState, container: string, now: number): Json {
  // The kubelet's back-off starts at 10 s and doubles up to 5 min; a restart each time it runs out.
  const restarts = 1 + Math.floor(Math.max(0, now - pod.createdAt) / 30_000);
  const seconds = Math.min(300, 10 * 2 ** Math.min(restarts - 1, 5));
  const backOff = seconds >= 60 ? `${Math.floor(seconds / 60)}m${seconds % 60}s` : `${seconds}s`;
  const uid = uuidFrom(`${cluster.name}/Pod/${pod.namespace}/${pod.name}`);
  return {
    restartCount: restarts,
    state: {
      waiting: {
        reason: 'CrashLoopBackOff',
        message: `back-off ${backOff} restarting failed container=${container} pod=${pod.name}_${pod.namespace}(${uid})`,
      },
    },
    lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: timestamp(now - 2000), finishedAt: timestamp(now - 1000) } },
  };
}

const OWNER_API: Record<PodState['owner']['kind'], string> = {
  ReplicaSet: 'apps/v1',
  DaemonSet: 'apps/v1',
  StatefulSet: 'apps/v1',
  Node: 'v1',
  InstanceManager: 'longhorn.io/v1beta2',
  Cluster: 'postgresql.cnpg.io/v1',
  None: '',
};

export function renderPod(cluster: SimCluster, pod: PodState): Json {
  const node = nodeByHostname(cluster, pod.nodeName);
  const ready = podReady(cluster, pod);
  const pending = pod.nodeName === '';
  const container = pod.image.split('/').pop()?.split(':')[0] ?? 'main';
  return {
    metadata: meta(cluster, 'Pod', pod.name, pod.namespace, pod.createdAt, {
      // Every pod object has its own UID: one recreated under the same name (a StatefulSet's, an instance manager) gets a new one.
      uid: uuidFrom(`${cluster.name}/Pod/${pod.namespace}/${pod.name}/${pod.createdAt}`),
      labels: pod.labels,
      ...(pod.mirror
        ? {
            annotations: {
              'kubernetes.io/config.mirror': createHash('md5').update(pod.name).digest('hex'),
              'kubernetes.io/config.source': 'file',
            },
          }
        : {}),
      ownerReferences:
        pod.owner.kind === 'None'
          ? undefined
          : [
              {
                apiVersion: OWNER_API[pod.owner.kind],
                kind: pod.owner.kind,
                name: pod.owner.name,
                uid: uuidFrom(`${cluster.name}/${pod.owner.kind}/${pod.owner.name}`),
                controller: true,
                ...(pod.owner.kind === 'Node' ? {} : { blockOwnerDeletion: true }),
              },
            ],
    }),
    spec: {
      ...(pending ? {} : { nodeName: pod.nodeName }),
      containers: [{ name: container, image: pod.image }],
      restartPolicy: 'Always',
      ...(pod.mirror ? { priorityClassName: 'system-cluster-critical', hostNetwork: true } : {}),
    },
    status: pending
      ? {
          phase: 'Pending',
          conditions: [
            {
              type: 'PodScheduled',
              status: 'False',
              reason: 'Unschedulable',
              message: '0/3 nodes are available: 1 node(s) were unschedulable.',
            },
          ],
        }
      : {
          phase: 'Running',
          hostIP: node?.address,
          podIP: pod.mirror
            ? node?.address
            : `10.244.${cluster.nodes.findIndex((n) => n.hostname === pod.nodeName)}.${10 + (pod.name.length % 200)}`,
          startTime: timestamp(pod.createdAt),
          conditions: [
            { type: 'PodScheduled', status: 'True', lastTransitionTime: timestamp(pod.createdAt) },
            { type: 'Initialized', status: 'True', lastTransitionTime: timestamp(pod.createdAt) },
            { type: 'ContainersReady', status: ready ? 'True' : 'False', lastTransitionTime: timestamp(pod.createdAt) },
            { type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: timestamp(pod.createdAt) },
          ],
          containerStatuses: [
            {
              name: container,
              image: pod.image,
              imageID: `${pod.image.split(':')[0]}@sha256:${createHash('sha256').update(pod.image).digest('hex')}`,
              ready,
              started: ready,
              restartCount: 0,
              state: { running: { startedAt: timestamp(pod.createdAt) } },
              ...(node !== undefined && nodeReady(cluster, node) === 'True' && crashLooping(cluster, pod)
                ? crashLoopStatus(cluster, pod, container, Date.now())
                : {}),
            },
          ],
        },
  };
}

export function renderNamespace(cluster: SimCluster, ns: NamespaceState): Json {
  return {
    metadata: meta(cluster, 'Namespace', ns.name, undefined, cluster.createdAt, { labels: ns.labels }),
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
}

function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

export function pdbsMatching(cluster: SimCluster, pod: PodState): PdbState[] {
  return cluster.kube.pdbs.filter((p) => p.namespace === pod.namespace && selects(p.selector, pod.labels));
}

export function disruptionsAllowed(cluster: SimCluster, pdb: PdbState): { allowed: number; healthy: number; expected: number } {
  const pods = cluster.kube.pods.filter((p) => p.namespace === pdb.namespace && selects(pdb.selector, p.labels));
  const healthy = pods.filter((p) => podReady(cluster, p)).length;
  const blocked = (cluster.faults.pdbBlocked ?? []).includes(pdb.name);
  const current = blocked ? Math.min(healthy, pdb.minAvailable) : healthy;
  return { allowed: Math.max(0, current - pdb.minAvailable), healthy: current, expected: pods.length };
}

export function renderPdb(cluster: SimCluster, pdb: PdbState, now: number): Json {
  const { allowed, healthy, expected } = disruptionsAllowed(cluster, pdb);
  return {
    metadata: meta(cluster, 'PodDisruptionBudget', pdb.name, pdb.namespace, cluster.createdAt, { generation: 1 }),
    spec: { minAvailable: pdb.minAvailable, selector: { matchLabels: pdb.selector } },
    status: {
      observedGeneration: 1,
      disruptionsAllowed: allowed,
      currentHealthy: healthy,
      desiredHealthy: pdb.minAvailable,
      expectedPods: expected,
      conditions: [
        {
          type: 'DisruptionAllowed',
          status: allowed > 0 ? 'True' : 'False',
          reason: allowed > 0 ? 'SufficientPods' : 'InsufficientPods',
          message: '',
          observedGeneration: 1,
          lastTransitionTime: timestamp(now - 60_000),
        },
      ],
    },
  };
}

export function renderVolume(cluster: SimCluster, state: SimState, volume: VolumeState, timing: SimTiming, now: number): Json {
  const pod = volumePod(cluster, volume);
  const view = volumeView(cluster, state, volume, timing, now);
  return {
    apiVersion: 'longhorn.io/v1beta2',
    kind: 'Volume',
    metadata: meta(cluster, 'Volume', volume.name, 'longhorn-system', cluster.createdAt, {
      generation: 2,
      labels: { longhornvolume: volume.name },
    }),
    spec: {
      numberOfReplicas: volume.replicas.length,
      size: String(volume.sizeBytes),
      frontend: 'blockdev',
      dataLocality: 'disabled',
      accessMode: 'rwo',
    },
    status: {
      state: view.state,
      robustness: view.robustness,
      currentNodeID: attachedNode(cluster, volume),
      kubernetesStatus: {
        pvName: volume.name,
        pvcName: volume.pvcName,
        namespace: volume.namespace,
        workloadsStatus: pod
          ? [
              {
                podName: pod.name,
                podStatus: pod.nodeName ? 'Running' : 'Pending',
                workloadName: pod.owner.name,
                workloadType: pod.owner.kind,
              },
            ]
          : [],
      },
    },
  };
}

/** One `replicas.longhorn.io` object per node holding a replica of the volume. */
export function renderReplicas(cluster: SimCluster, state: SimState, volume: VolumeState, timing: SimTiming, now: number): Json[] {
  return volume.replicas.map((hostname) => {
    const replica = replicaView(cluster, state, volume, hostname, timing, now);
    const name = replicaName(volume, hostname);
    return {
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'Replica',
      metadata: meta(cluster, 'Replica', name, 'longhorn-system', cluster.createdAt, {
        labels: { longhornnode: hostname, longhornvolume: volume.name },
      }),
      spec: {
        nodeID: hostname,
        volumeName: volume.name,
        volumeSize: String(volume.sizeBytes),
        desireState: replica.desireState,
        healthyAt: replica.healthyAt === undefined ? '' : timestamp(replica.healthyAt),
        failedAt: replica.failedAt === undefined ? '' : timestamp(replica.failedAt),
        dataEngine: 'v1',
      },
      status: { currentState: replica.currentState, ownerID: hostname },
    };
  });
}

function replicaName(volume: VolumeState, hostname: string): string {
  return `${volume.name}-r-${nameSuffix(`${volume.name}/${hostname}`, 8)}`;
}

/** The replica's data-plane address, `<node IP>:<port>`, as the engine's `currentReplicaAddressMap` holds it. */
function replicaAddress(cluster: SimCluster, volume: VolumeState, hostname: string): string {
  const node = cluster.nodes.find((n) => n.hostname === hostname);
  return `${node?.address ?? hostname}:${10000 + (cluster.kube.volumes.indexOf(volume) % 50) * 15}`;
}

/**
 * The volume's `engines.longhorn.io` object (k8s/pkg/apis/longhorn/v1beta2/engine.go, v1.10.2):
 * running on the node the volume is attached to, with each replica's mode (`RW` healthy, `WO`
 * rebuilding, `ERR` failed) and the engine's `rebuildStatus`, keyed by `tcp://<replica address>`
 * (engineapi.GetBackendReplicaURL). A detached volume's engine is stopped and reports nothing.
 */
export function renderEngine(cluster: SimCluster, state: SimState, volume: VolumeState, timing: SimTiming, now: number): Json {
  const nodeID = attachedNode(cluster, volume);
  const running = !volume.detached;
  const addresses: Record<string, string> = {};
  const modes: Record<string, string> = {};
  const rebuild: Record<string, Json> = {};
  if (running) {
    for (const hostname of volume.replicas) {
      const replica = replicaView(cluster, state, volume, hostname, timing, now);
      const name = replicaName(volume, hostname);
      const address = replicaAddress(cluster, volume, hostname);
      addresses[name] = address;
      modes[name] = replica.currentState !== 'running' ? 'ERR' : replica.healthyAt === undefined ? 'WO' : 'RW';
      const rebuilt = rebuildView(cluster, state, volume, hostname, timing, now);
      const source = volume.replicas.find((h) => h !== hostname && isHealthyReplica(replicaView(cluster, state, volume, h, timing, now)));
      if (rebuilt !== undefined)
        rebuild[`tcp://${address}`] = {
          error: '',
          isRebuilding: rebuilt.isRebuilding,
          progress: rebuilt.progress,
          state: rebuilt.state,
          fromReplicaAddress: source === undefined ? '' : `tcp://${replicaAddress(cluster, volume, source)}`,
          appliedRebuildingMBps: 0,
        };
    }
  }
  return {
    apiVersion: 'longhorn.io/v1beta2',
    kind: 'Engine',
    metadata: meta(cluster, 'Engine', `${volume.name}-e-0`, 'longhorn-system', cluster.createdAt, {
      labels: { longhornnode: nodeID, longhornvolume: volume.name },
    }),
    spec: {
      volumeName: volume.name,
      volumeSize: String(volume.sizeBytes),
      nodeID,
      desireState: running ? 'running' : 'stopped',
      dataEngine: 'v1',
      frontend: 'blockdev',
      replicaAddressMap: addresses,
    },
    status: {
      currentState: running ? 'running' : 'stopped',
      ownerID: nodeID,
      currentReplicaAddressMap: addresses,
      replicaModeMap: modes,
      rebuildStatus: rebuild,
    },
  };
}

/** `settings.longhorn.io`: the value sits at the top level of the object, next to `metadata`. */
/**
 * Longhorn creates a Setting CR for every setting it knows, with its default, when the manager
 * starts (longhorn/longhorn-manager datastore/longhorn.go `createNonExistingSettingCRsWithDefaultSetting`,
 * v1.12.1): so the replica anti-affinity settings are always listed, at their defaults from
 * types/setting.go (`replica-soft-anti-affinity` "false", `replica-zone-soft-anti-affinity` "true")
 * unless the cluster's settings change them.
 */
const LONGHORN_SETTING_DEFAULTS: Record<string, string> = {
  'replica-soft-anti-affinity': 'false',
  'replica-zone-soft-anti-affinity': 'true',
};

export function renderSettings(cluster: SimCluster): Json[] {
  const settings: Record<string, string> = {
    ...LONGHORN_SETTING_DEFAULTS,
    ...cluster.kube.longhornSettings,
    'node-drain-policy': drainPolicy(cluster),
  };
  return Object.entries(settings).map(([name, value]) => ({
    apiVersion: 'longhorn.io/v1beta2',
    kind: 'Setting',
    metadata: meta(cluster, 'Setting', name, 'longhorn-system', cluster.createdAt),
    value,
    status: { applied: true },
  }));
}

/** The runbook's dedicated Longhorn disk: a Talos user volume mounted at `/var/mnt/longhorn`. */
export const RUNBOOK_LONGHORN_PATH = '/var/mnt/longhorn';

/**
 * Longhorn's Node objects (`nodes.longhorn.io`), one per storage node, each with the disk Longhorn
 * created from its default data path: named `default-disk-<fsid>` (longhorn/longhorn-manager
 * types/types.go `DefaultDiskPrefix`, v1.10.2), `diskType: filesystem`, the path as configured
 * (k8s/pkg/apis/longhorn/v1beta2/node.go `DiskSpec`, v1.10.2; the setting `default-data-path`
 * defaults to `/var/lib/longhorn/`, types/setting.go).
 */
export function renderLonghornNodes(cluster: SimCluster): Json[] {
  return cluster.nodes
    .filter((n) => n.longhorn)
    .map((node) => {
      const path = cluster.shape.nodes.find((s) => s.hostname === node.hostname)?.longhornDataPath ?? RUNBOOK_LONGHORN_PATH;
      const fsid = createHash('sha256').update(`${cluster.name}/${node.hostname}/${path}`).digest('hex').slice(0, 16);
      return {
        apiVersion: 'longhorn.io/v1beta2',
        kind: 'Node',
        metadata: meta(cluster, 'LonghornNode', node.hostname, 'longhorn-system', cluster.createdAt, { generation: 1 }),
        spec: {
          name: node.hostname,
          allowScheduling: true,
          evictionRequested: false,
          tags: [],
          disks: {
            [`default-disk-${fsid}`]: {
              diskType: 'filesystem',
              diskDriver: '',
              path,
              allowScheduling: true,
              evictionRequested: false,
              storageReserved: 0,
              tags: [],
            },
          },
        },
      };
    });
}

/** DaemonSets from their pods: one pod per node it runs on, ready when the pod is. */
export function renderDaemonSets(cluster: SimCluster): Json[] {
  const groups = new Map<string, PodState[]>();
  for (const pod of cluster.kube.pods.filter((p) => p.owner.kind === 'DaemonSet')) {
    const key = `${pod.namespace}/${pod.owner.name}`;
    groups.set(key, [...(groups.get(key) ?? []), pod]);
  }
  return [...groups.values()].map((pods) => {
    const { namespace, owner, labels } = pods[0]!;
    const ready = pods.filter((p) => podReady(cluster, p)).length;
    return {
      metadata: meta(cluster, 'DaemonSet', owner.name, namespace, cluster.createdAt, { generation: 1, labels }),
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: owner.name === 'cilium' ? 'cilium-agent' : owner.name, image: pods[0]!.image }] },
        },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
      },
      status: {
        observedGeneration: 1,
        desiredNumberScheduled: pods.length,
        currentNumberScheduled: pods.length,
        updatedNumberScheduled: pods.length,
        numberReady: ready,
        numberAvailable: ready,
        ...(ready < pods.length ? { numberUnavailable: pods.length - ready } : {}),
        numberMisscheduled: 0,
      },
    };
  });
}

/** Deployments from the pods of their ReplicaSets; Available as the deployment controller sets it (maxUnavailable 25%). */
export function renderDeployments(cluster: SimCluster, now: number): Json[] {
  const groups = new Map<string, PodState[]>();
  for (const pod of cluster.kube.pods.filter((p) => p.owner.kind === 'ReplicaSet')) {
    const key = `${pod.namespace}/${workloadOf(pod)}`;
    groups.set(key, [...(groups.get(key) ?? []), pod]);
  }
  return [...groups.values()].map((pods) => {
    const { namespace, labels } = pods[0]!;
    const name = workloadOf(pods[0]!);
    const ready = pods.filter((p) => podReady(cluster, p)).length;
    const available = ready >= pods.length - Math.floor(pods.length / 4);
    const since = timestamp(now - 60_000);
    return {
      metadata: meta(cluster, 'Deployment', name, namespace, cluster.createdAt, { generation: 1, labels }),
      spec: { replicas: pods.length, selector: { matchLabels: labels }, template: podTemplate(cluster, pods[0]!, name) },
      status: {
        observedGeneration: 1,
        replicas: pods.length,
        updatedReplicas: pods.length,
        readyReplicas: ready,
        availableReplicas: ready,
        ...(ready < pods.length ? { unavailableReplicas: pods.length - ready } : {}),
        conditions: [
          available
            ? {
                type: 'Available',
                status: 'True',
                reason: 'MinimumReplicasAvailable',
                message: 'Deployment has minimum availability.',
                lastUpdateTime: since,
                lastTransitionTime: since,
              }
            : {
                type: 'Available',
                status: 'False',
                reason: 'MinimumReplicasUnavailable',
                message: 'Deployment does not have minimum availability.',
                lastUpdateTime: since,
                lastTransitionTime: since,
              },
          {
            type: 'Progressing',
            status: 'True',
            reason: 'NewReplicaSetAvailable',
            message: `ReplicaSet "${pods[0]!.owner.name}" has successfully progressed.`,
            lastUpdateTime: since,
            lastTransitionTime: since,
          },
        ],
      },
    };
  });
}

/**
 * A workload's pod template (kubernetes/api apps/v1/types.go, v0.34.2: `template` is required on a
 * Deployment and a StatefulSet). The seeded estate follows the runbook: its own workloads spread
 * over the host label; kube-system's (rendered by Talos) do not; `unspreadWorkloads` names those
 * seeded without the spread.
 */
function podTemplate(cluster: SimCluster, pod: PodState, name: string): Json {
  const hostLabel = cluster.shape.hostLabel ?? 'example.org/proxmox-host';
  const spread = pod.namespace !== 'kube-system' && !(cluster.kube.unspreadWorkloads ?? []).includes(`${pod.namespace}/${name}`);
  return {
    metadata: { labels: pod.labels },
    spec: {
      containers: [{ name, image: pod.image }],
      ...(spread
        ? {
            topologySpreadConstraints: [
              { topologyKey: hostLabel, maxSkew: 1, whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: pod.labels } },
            ],
          }
        : {}),
    },
  };
}

/** `apps/v1` StatefulSets, from their pods: `replicas` is the pod count, as after a rollout. */
export function renderStatefulSets(cluster: SimCluster): Json[] {
  const groups = new Map<string, PodState[]>();
  for (const pod of cluster.kube.pods.filter((p) => p.owner.kind === 'StatefulSet')) {
    const key = `${pod.namespace}/${pod.owner.name}`;
    groups.set(key, [...(groups.get(key) ?? []), pod]);
  }
  return [...groups.values()].map((pods) => {
    const { namespace, labels, owner } = pods[0]!;
    const ready = pods.filter((p) => podReady(cluster, p)).length;
    return {
      metadata: meta(cluster, 'StatefulSet', owner.name, namespace, cluster.createdAt, { generation: 1, labels }),
      spec: {
        replicas: pods.length,
        serviceName: owner.name,
        selector: { matchLabels: labels },
        template: podTemplate(cluster, pods[0]!, owner.name),
      },
      status: {
        observedGeneration: 1,
        replicas: pods.length,
        readyReplicas: ready,
        currentReplicas: pods.length,
        updatedReplicas: pods.length,
      },
    };
  });
}

/** A `postgresql.cnpg.io/v1` Cluster as the operator reports it. */
export function renderCnpgCluster(cluster: SimCluster, c: CnpgClusterState, now: number): Json {
  const pods = instancesOf(cluster, c);
  const ready = pods.filter((p) => podReady(cluster, p));
  const healthy = ready.length === c.instances;
  const last = c.switchovers.at(-1);
  return {
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Cluster',
    metadata: {
      name: c.name,
      namespace: c.namespace,
      uid: uuidFrom(`${cluster.name}/Cluster/${c.namespace}/${c.name}`),
      resourceVersion: String(
        10_000 + (createHash('sha1').update(`${c.name}/${cluster.kube.resourceVersion}`).digest().readUInt32BE(0) % 900_000),
      ),
      creationTimestamp: timestamp(cluster.createdAt),
      generation: 1,
    },
    spec: {
      instances: c.instances,
      imageName: CNPG_IMAGE,
      enablePDB: true,
      primaryUpdateStrategy: 'unsupervised',
      affinity: {
        enablePodAntiAffinity: true,
        podAntiAffinityType: c.podAntiAffinityType ?? 'preferred',
        topologyKey: 'kubernetes.io/hostname',
      },
      storage: { size: '10Gi' },
    },
    status: {
      instances: pods.length,
      readyInstances: ready.length,
      currentPrimary: c.currentPrimary,
      targetPrimary: c.currentPrimary,
      ...(last ? { currentPrimaryTimestamp: timestamp(last.at), targetPrimaryTimestamp: timestamp(last.at) } : {}),
      phase: healthy ? 'Cluster in healthy state' : 'Waiting for the instances to become active',
      instancesStatus: {
        healthy: ready.map((p) => p.name),
        ...(healthy ? {} : { failed: pods.filter((p) => !ready.includes(p)).map((p) => p.name) }),
      },
      instanceNames: pods.map((p) => p.name),
      conditions: [
        {
          type: 'Ready',
          status: healthy ? 'True' : 'False',
          reason: healthy ? 'ClusterIsReady' : 'ClusterIsNotReady',
          message: healthy ? 'Cluster is Ready' : 'Cluster Is Not Ready',
          lastTransitionTime: timestamp(now - 60_000),
        },
      ],
    },
  };
}
