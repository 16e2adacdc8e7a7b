/** The simulator's state: one in-memory model that every fake endpoint reads and mutates. */
import type { ClusterFaults } from './faults.ts';

export type NodeRole = 'controlplane' | 'worker';

/**
 * Where a machine is in its lifecycle. `lost` is a node that booted but is not reachable any more
 * (renamed NIC after a generic installer, or a rollback that never came back).
 */
export type MachineStage = 'running' | 'booting' | 'upgrading' | 'rebooting' | 'resetting' | 'off' | 'maintenance' | 'lost';

export interface NodeShape {
  hostname: string;
  address: string;
  role: NodeRole;
  /** Physical Proxmox host, written to the cluster's host label, e.g. `pve1`. */
  host: string;
  /** A Longhorn storage node: it holds volume replicas (the runbook's design gives every node a Longhorn disk). */
  longhorn?: boolean;
  /**
   * The Terraform installer the node was built from: `longhorn` for a Longhorn worker, which
   * runs the schematic of `talos_longhorn_installer_image` (the runbook gives it to Longhorn
   * workers only). Default `default`, Terraform's `talos_image_factory_schematic_id`.
   */
  installer?: 'default' | 'longhorn';
  /**
   * Where Longhorn keeps this node's data (its disk's `spec.disks[*].path` in `nodes.longhorn.io`).
   * Default `/var/mnt/longhorn`, the runbook's dedicated disk (a Talos user volume); Longhorn's own
   * default is `/var/lib/longhorn/`, on EPHEMERAL.
   */
  longhornDataPath?: string;
  /**
   * The type of the Talos user volume at `/var/mnt/<name>` that holds `longhornDataPath`, when it is
   * one: `partition` (default, its own partition, kept by an EPHEMERAL wipe) or `directory` (a folder
   * on EPHEMERAL).
   */
  longhornVolumeType?: 'partition' | 'directory';
}

export interface ClusterShape {
  name: string;
  environment: 'staging' | 'production';
  /** Talos version every node runs at start, e.g. `v1.11.5`. */
  talosVersion: string;
  /** Kubernetes version at start, e.g. `v1.34.1`. */
  kubernetesVersion: string;
  nodes: NodeShape[];
  /** Layer 2 virtual IP of the Kubernetes endpoint, when the cluster has one. */
  vip?: string;
  /** talosconfig endpoints. */
  endpoints: string[];
  /** The cluster's Kubernetes endpoint as the machine config names it. */
  kubernetesEndpoint: string;
  /** Longhorn installed: namespace, volumes, HelmRelease. */
  longhorn: boolean;
  /** Control planes carry no NoSchedule taint and run workloads. */
  schedulingOnControlPlanes: boolean;
  /** Official extensions of the default schematic (`talos_image_factory_schematic_id`). */
  defaultExtensions: string[];
  /** Official extensions of the Longhorn node class schematic. */
  longhornExtensions?: string[];
  /** CloudNativePG Clusters (`postgresql.cnpg.io/v1`) the cluster runs, with the budgets CloudNativePG creates. */
  cnpg?: {
    name: string;
    namespace: string;
    instances: number;
    /** `spec.affinity.podAntiAffinityType`: `preferred` (CloudNativePG's default) or `required`, one instance per node. */
    podAntiAffinityType?: 'preferred' | 'required';
  }[];
  /** Flux path of this cluster, e.g. `./clusters/production`. */
  fluxPath: string;
  /** Installer platform of the VMs. Default `nocloud`. */
  installerPlatform?: string;
  /** Node label naming the physical host. Default `example.org/proxmox-host`. */
  hostLabel?: string;
}

/** One machine event as talosctl's tracker prints it (the text after `"<node>": `). */
export interface MachineEvent {
  seq: number;
  at: number;
  /** Empty for events not caused by an API call (the boot sequence). */
  actorId: string;
  kind: 'sequence' | 'phase' | 'task' | 'status' | 'service';
  text: string;
  /** For `task`: the task name, so trackers can spot `stopAllServices`. */
  task?: string;
  /** For `status`: machine stage and readiness. */
  stage?: string;
  ready?: boolean;
  /** For a failed sequence: the error message. */
  error?: string;
}

export interface ControlPlaneComponents {
  apiserver: string;
  controllerManager: string;
  scheduler: string;
}

export interface SimNode {
  hostname: string;
  address: string;
  role: NodeRole;
  host: string;
  longhorn: boolean;
  /** Talos version currently booted. */
  talosVersion: string;
  /** The other A/B boot entry, target of `rollback`. */
  fallbackVersion?: string;
  fallbackSchematic?: string;
  schematic: string;
  platform: string;
  /** The machine's GOARCH as the kubelet reports it (`status.nodeInfo.architecture`); default `amd64`. */
  arch?: string;
  kubeletVersion: string;
  /** Static pod versions, control planes only. */
  components?: ControlPlaneComponents;
  stage: MachineStage;
  bootId: string;
  bootedAt: number;
  /** `%016x` member id, control planes only. */
  etcdMemberId?: string;
  /** Listed in the etcd member list. */
  etcdMember: boolean;
  /** Listed in discovery (`get members`). */
  discoveryMember: boolean;
  /** The Kubernetes Node object exists. */
  k8sRegistered: boolean;
  /** spec.unschedulable. */
  cordoned: boolean;
  /** Cordoned by a Talos upgrade, so Talos uncordons it after boot. */
  cordonedByTalos: boolean;
  /** Booted but the kubelet never reports Ready (fault applied at boot). */
  kubeletNotReady: boolean;
  /** A running upgrade or reset sequence has stopped etcd and the kubelet. */
  servicesStopped: boolean;
  /** Events since the last boot: the buffer a real node loses on reboot. */
  events: MachineEvent[];
  /** When the node was last back up, for Longhorn rebuild. */
  lastUpAt: number;
  memoryMiB: number;
  diskBytes: number;
  /** A non-voting etcd member that is still catching up; Talos promotes it (control planes only). */
  etcdLearner?: boolean;
  /** Terraform destroyed the VM: the machine is gone, its Node and etcd member stay until someone removes them. */
  vmDestroyed?: boolean;
  /**
   * `/var/lib/etcd` is empty: the EPHEMERAL partition was wiped and nothing has written etcd data
   * since (reference/etcd-recovery.md). Bootstrap is only accepted on such a node.
   */
  etcdDataEmpty?: boolean;
  /**
   * etcd sits in its PreFunc join loop (services/etcd.go v1.13.9 `buildInitialCluster`): STATE
   * Preparing, "Running pre state", until a running etcd cluster takes it as a learner or a
   * bootstrap replaces the service.
   */
  etcdWaitingJoin?: boolean;
  /** A bootstrap's etcd is in its PreFunc (restoring the snapshot): Preparing, neither running nor failed yet. */
  etcdRestoring?: boolean;
  /** The etcd service failed (STATE Failed) with this event message, e.g. a restore's hash check. */
  etcdFailed?: string;
  /** When the current etcd service instance was loaded (a bootstrap replaces it), for its event history. */
  etcdServiceSince?: number;
  /** `/var/lib/etcd.snapshot`: what EtcdRecover uploaded, until a recovery consumes it. */
  recoverySnapshot?: Buffer;
  /**
   * This incarnation of the machine crashed or lost power (`Simulator.failMachine`): stage `off`, apid
   * gone, its Node Unknown, its etcd member listed and unreachable. A VM Terraform recreates is a new
   * incarnation and answers again.
   */
  failed?: boolean;
  /** When it failed: the kubelet's last heartbeat, Longhorn's replica failure time. */
  failedAt?: number;
  /**
   * Its etcd member was removed (`etcd remove-member`) while its data directory stays: etcd on it
   * exits ("the member has been permanently removed from the cluster", etcd-io/etcd v3.6.5
   * rafthttp) every time Talos restarts it, until the machine is wiped or recreated.
   */
  etcdRemoved?: boolean;
  /**
   * The etcd member of the previous incarnation of this machine, still listed after Terraform
   * recreated the VM: unreachable, counted in quorum, until someone removes it (`etcd remove-member`)
   * or the new machine joins, which removes a member of its own name first
   * (reference/node-replacement.md). A frozen copy of the old machine, stage `off`.
   */
  staleMember?: SimNode;
}

export interface PodState {
  name: string;
  namespace: string;
  /** Empty while Pending. */
  nodeName: string;
  labels: Record<string, string>;
  /** `InstanceManager`: Longhorn's instance manager, bound to its node like a DaemonSet pod. */
  /**
   * `Cluster`: a CloudNativePG instance, owned by its `postgresql.cnpg.io/v1` Cluster. `None`: a
   * pod created on its own (no owner references): nothing recreates it once it is deleted.
   */
  owner: { kind: 'ReplicaSet' | 'DaemonSet' | 'Node' | 'StatefulSet' | 'InstanceManager' | 'Cluster' | 'None'; name: string };
  image: string;
  createdAt: number;
  /** Static pods (mirror pods) of the control plane. */
  mirror?: boolean;
}

export interface PdbState {
  name: string;
  namespace: string;
  minAvailable: number;
  selector: Record<string, string>;
  /** Longhorn's budget for the instance manager of this node (hostname): Longhorn deletes and recreates it. */
  longhornNode?: string;
}

export interface FluxObjectState {
  kind: 'Kustomization' | 'HelmRelease';
  name: string;
  namespace: string;
  /** Kustomization path. */
  path?: string;
  /** HelmRelease chart and version. */
  chart?: string;
  chartVersion?: string;
  generation: number;
  revision: string;
  /**
   * The last `reconcile.fluxcd.io/requestedAt` annotation written through the API: its value, when it
   * was written, how long the controller takes to handle it, and the value handled before it.
   */
  reconcileRequest?: { token: string; at: number; reconcileMs: number; previous?: string };
}

export interface VolumeState {
  name: string;
  pvcName: string;
  namespace: string;
  /** Hostnames holding a replica. */
  replicas: string[];
  sizeBytes: number;
  attachedTo: string;
  /** No workload uses it: Longhorn keeps it detached, its replicas stopped, robustness `unknown`. */
  detached?: boolean;
  /** The pod that mounts its claim (`namespace` is the volume's); default: the claim name without `data-`. */
  podName?: string;
  /**
   * When the engine's node lost its EPHEMERAL partition (and the instance manager with it): the
   * volume is detached until that node is running again (reference/etcd-recovery.md).
   */
  engineLostAt?: number;
}

export interface NamespaceState {
  name: string;
  labels: Record<string, string>;
}

/** A Longhorn RecurringJob's spec (k8s/pkg/apis/longhorn/v1beta2/recurringjob.go `RecurringJobSpec`, longhorn/longhorn-manager v1.12.1). */
export interface RecurringJobState {
  name: string;
  /** `snapshot`, `snapshot-force-create`, `snapshot-cleanup`, `snapshot-delete`, `backup`, `backup-force-create`, `filesystem-trim` or `system-backup`. */
  task: string;
  cron: string;
  retain: number;
  /** `default` applies the job to every volume without a recurring-job label. */
  groups: string[];
}

/** A CloudNativePG ScheduledBackup's spec (api/v1/scheduledbackup_types.go `ScheduledBackupSpec`, cloudnative-pg/cloudnative-pg v1.30.0). */
export interface ScheduledBackupState {
  name: string;
  namespace: string;
  /** `spec.cluster.name`: the Cluster in the same namespace it backs up. */
  cluster: string;
  /** Six fields, seconds first (robfig/cron as CloudNativePG parses it). */
  schedule: string;
  suspend?: boolean;
}

export interface KubeState {
  namespaces: NamespaceState[];
  pods: PodState[];
  pdbs: PdbState[];
  flux: FluxObjectState[];
  volumes: VolumeState[];
  /** Longhorn's settings (`settings.longhorn.io`) by name, e.g. `node-drain-policy`; empty without Longhorn. */
  longhornSettings: Record<string, string>;
  /** CloudNativePG Clusters: which instance is the primary, and the switchovers the operator made. */
  cnpg?: CnpgClusterState[];
  /** Longhorn's recurring jobs (`recurringjobs.longhorn.io`); absent or empty: none. */
  recurringJobs?: RecurringJobState[];
  /** CloudNativePG's scheduled backups (`scheduledbackups.postgresql.cnpg.io`); absent or empty: none. */
  scheduledBackups?: ScheduledBackupState[];
  /** prometheus-operator's rules and monitors; absent: its CRDs are not installed. */
  monitoring?: MonitoringState;
  /** Deployments and StatefulSets (`namespace/name`) whose pod template has no spread on the host label. */
  unspreadWorkloads?: string[];
  /** Last `resourceVersion` handed out. */
  resourceVersion: number;
  /**
   * When the controllers (Flux, Longhorn) found the API again after an etcd recovery: they reconcile
   * every object anew, so Flux restamps its conditions (reference/etcd-recovery.md).
   */
  controllersRestartedAt?: number;
  /** When Flux's controllers have reconciled every object again after that restart (Ready=True, restamped). */
  fluxReconciledAt?: number;
}

export interface CnpgClusterState {
  name: string;
  namespace: string;
  instances: number;
  podAntiAffinityType?: 'preferred' | 'required';
  /** Pod name of the current primary, e.g. `db-1`. */
  currentPrimary: string;
  switchovers: { from: string; to: string; node: string; at: number }[];
}

export interface EtcdState {
  /** Member id of the leader, as elected. */
  leaderId?: string;
  raftTerm: number;
  /** Raft index at simulator start; it grows with time. */
  raftIndexBase: number;
  revisionBase: number;
  totalKeys: number;
  dbSizeBytes: number;
  dbInUseBytes: number;
  /** The upgrade mutex of the Upgrade API: held while a control plane validates an upgrade. */
  upgradeMutexHolder?: string;
}

/** One entry of `talos_nodes` in `cluster.auto.tfvars.json`, keyed by hostname. */
export interface DeclaredNode {
  address: string;
  role: NodeRole;
  /** Physical Proxmox host. */
  host: string;
  longhorn: boolean;
  /** Built from `talos_longhorn_installer_image` (a Longhorn worker); absent: the default schematic. */
  longhorn_installer?: boolean;
  /** Bumped to recreate this VM (a change that forces replacement). */
  vm_generation: number;
  /** The VM resource's `stop_on_destroy` (bpg provider; default false: a graceful guest shutdown before the destroy). */
  stop_on_destroy?: boolean;
}

/** The declared inputs of one cluster, as `terraform/<cluster>/cluster.auto.tfvars.json` holds them. */
export interface DeclaredInputs {
  talos_version: string;
  talos_kubernetes_version: string;
  /** Revision of the Talos machine-config patches every node applies. */
  talos_config_patch_revision: number;
  /** Bumped to regenerate `talos_machine_secrets` (a cluster migration, never maintenance). */
  talos_secrets_generation: number;
  talos_nodes: Record<string, DeclaredNode>;
  /**
   * The `lifecycle` blocks of the configuration, keyed by resource (`type.name`, e.g.
   * `talos_machine_secrets.this`): `create_before_destroy` makes a replacement `["create","delete"]`,
   * `destroy = false` (OpenTofu ≥ 1.12) makes it `["forget","create"]` and a removed instance
   * `["forget"]`. Absent: tofu's defaults.
   */
  lifecycle?: Record<string, ResourceLifecycle>;
  /**
   * The configuration's `removed` blocks (OpenTofu ≥ 1.7): `from` a resource (`type.name`) or one
   * instance's address; an instance gone from the configuration that one names is destroyed or, with
   * `destroy: false`, only forgotten (`["forget"]`, no action reason). It takes precedence over `lifecycle`.
   */
  removed?: { from: string; destroy: boolean }[];
}

/** One resource's `lifecycle` block, as far as the plan's actions depend on it. */
export interface ResourceLifecycle {
  create_before_destroy?: boolean;
  /** `false` keeps the real object when tofu would destroy it: it is only removed from the state. */
  destroy?: boolean;
  /**
   * `replace_triggered_by` references, e.g. `proxmox_virtual_environment_vm.talos[each.key]`: the
   * instance is replaced when the referenced instance of the same key is created, updated or replaced.
   */
  replace_triggered_by?: string[];
}

/** One resource instance in the Terraform state (or in a plan's desired state). */
export interface ResourceInstance {
  address: string;
  type: string;
  name: string;
  /** for_each key. */
  index?: string;
  provider: string;
  /** Attribute values; `generation` forces replacement, the rest update in place. */
  attributes: Record<string, string | number | boolean>;
}

/** The Terraform state of one cluster: what the last apply left behind. */
export interface TofuState {
  lineage: string;
  /** Bumped by every apply that writes the state, partial ones included. */
  serial: number;
  resources: Record<string, ResourceInstance>;
}

/** Declared Terraform values: they change only when operators apply Terraform. */
export interface TerraformState {
  talosVersion: string;
  kubernetesVersion: string;
  defaultSchematic: string;
  longhornSchematic?: string;
  installerPlatform: string;
  /** The inputs the state was last applied from. */
  applied: DeclaredInputs;
  state: TofuState;
}

export interface SimCluster {
  name: string;
  environment: 'staging' | 'production';
  shape: ClusterShape;
  nodes: SimNode[];
  vip?: string;
  endpoints: string[];
  kubernetesEndpoint: string;
  terraformDir: string;
  snapshotDir: string;
  terraform: TerraformState;
  etcd: EtcdState;
  kube: KubeState;
  credentials: {
    talosconfig: string;
    kubeconfig: string;
    token: string;
    /** The base64 `key` of the talosconfig context, which identifies the cluster. */
    talosKey: string;
    /** What `talos_machine_secrets` holds (sensitive): it carries the secrets canary. */
    machineSecrets: string;
  };
  kubeApiPort: number;
  createdAt: number;
  faults: ClusterFaults;
}

/**
 * When `upgrade --wait` through the upgrading node itself hangs at `waiting for actor ID` (the VIP
 * always hangs). `multi-control-plane`: only where another control plane could have been the
 * endpoint, so a single-control-plane cluster stays upgradable.
 */
export type SelfEndpointHang = 'multi-control-plane' | 'always' | 'never';

export interface SimState {
  clusters: Record<string, SimCluster>;
  behavior: { selfEndpointHang: SelfEndpointHang };
  /** Schematic id → official extensions, shared with the Image Factory. */
  schematics: Record<string, string[]>;
  /** Talos versions the Image Factory knows. */
  factoryVersions: string[];
}

export interface SimTiming {
  /** Delay between progress steps of upgrade, reset and upgrade-k8s, in ms. Default 10. */
  stepMs: number;
  /** How long a rebooting node is unreachable, in ms. Default 200. */
  rebootMs: number;
  /** From power-on until the node is Ready, in ms. Default 3 × stepMs. */
  bootMs: number;
  /** Longhorn rebuild time after a node is back, in ms. Default 300. */
  longhornRebuildMs: number;
  /** Interval of talosctl's `unavailable, retrying...` reconnect attempts, in ms. Default 50. */
  retryMs: number;
  /** Interval between re-runs of a failing `talosctl health` check, in ms. Default 25. */
  healthRetryMs: number;
  /** Time a kubelet needs to re-register a deleted Node object of a running machine, in ms. Default rebootMs. */
  reregisterMs: number;
  /** From a new control plane joining etcd as a learner until Talos promotes it to a voter, in ms. Default 4 × stepMs. */
  learnerPromoteMs: number;
  /**
   * What talosctl's default `--drain-timeout` (5m0s, cmd/talosctl/pkg/talos/nodedrain/nodedrain.go v1.13.9)
   * lasts in simulated time, in ms. Default 30 × stepMs. An explicit `--drain-timeout` is taken literally.
   */
  drainTimeoutMs?: number;
  /**
   * "Still creating/modifying/destroying... [N elapsed]" lines each resource of a `tofu apply`
   * prints before it completes, as tofu does every 10 s of a slow change
   * (internal/command/views/hook_ui.go v1.12.6, `stillApplying`), printed at once here. Default 0.
   */
  tofuStillLines?: number;
  /**
   * After an etcd recovery, how long Flux's controllers take to reconcile an object again (Ready=Unknown
   * "Reconciliation in progress" meanwhile), in ms. Default 4 × stepMs, at least 1000: conditions carry
   * whole seconds, so a restamp lands in a later second than the bootstrap that caused it, as a real one does.
   */
  fluxReconcileMs: number;
  /**
   * etcd's join limit in simulated time, in ms: how long a wiped control plane retries joining
   * (`constants.EtcdJoinTimeout`, 30 min, every 3 s: services/etcd.go `buildInitialCluster`,
   * siderolabs/talos v1.13.9 and v1.14.0-rc.1) before its etcd service is Failed. Read at every
   * attempt, so a test may lower it to make the limit strike, and raise it again. Default 600 × stepMs
   * (600 attempts), at least a minute, so that no test meets it unless it asks.
   */
  etcdJoinTimeoutMs: number;
}

export type CallBin = 'talosctl' | 'tofu';

export interface CallRecord {
  id: number;
  bin: CallBin;
  argv: string[];
  cwd: string;
  /** Cluster resolved from the credentials (talosctl) or the working directory (tofu). */
  cluster?: string;
  /** talosctl client version of the wrapper that ran. */
  clientVersion?: string;
  startedAt: number;
  endedAt?: number;
  /** Undefined while running; null when the process went away before the command finished. */
  exitCode?: number | null;
  /** Why the command never answered, when it hung. */
  hung?: string;
}

export type SimEventKind =
  | 'upgrade-start'
  | 'upgrade-rejected'
  | 'upgrade-failed'
  | 'reboot'
  | 'up'
  | 'rollback'
  | 'reset'
  | 'reset-failed'
  | 'lost'
  | 'k8s-component-updated'
  | 'k8s-upgraded'
  | 'snapshot'
  | 'node-deleted'
  /** A drain could not evict a pod: `detail` names the budget that refused. */
  | 'drain-blocked'
  /** Longhorn deleted a node's instance-manager budget during its drain (`detail`: the budget). */
  | 'longhorn-pdb-deleted'
  /** Longhorn rebuilt a replica of a cordoned node on another node (`detail`: `<volume> → <node>`). */
  | 'longhorn-replica-evicted'
  /** Longhorn recreated it once the node was schedulable again. */
  | 'longhorn-pdb-created'
  /** A `tofu apply` wrote the state (`detail`: `N added, N changed, N destroyed`, or the failure). */
  | 'tofu-apply'
  /** An apply replaced `talos_machine_secrets`: a cluster migration. */
  | 'secrets-replaced'
  /** An apply created, replaced or destroyed a node's VM. */
  | 'vm-created'
  | 'vm-replaced'
  | 'vm-destroyed'
  /** A control plane joined etcd as a learner, and later was promoted to a voting member. */
  | 'etcd-learner-added'
  | 'etcd-learner-promoted'
  /** `talosctl etcd remove-member` removed a member (`detail`: its `%016x` id; `node`: the address it had). */
  | 'etcd-member-removed'
  /** A joining control plane removed the member of its own name left by its previous incarnation (`detail`: that id). */
  | 'etcd-member-superseded'
  /** A machine crashed or lost power (`Simulator.failMachine`). */
  | 'machine-failed'
  /** The eviction API let a pod go (`detail`: `ns/name`), or a budget refused it (`detail`: `ns/name by ns/budget`). */
  | 'pod-evicted'
  | 'eviction-refused'
  /** A client cordoned or uncordoned the node through the API (`detail`: the Node's name). */
  | 'cordoned'
  | 'uncordoned'
  /**
   * A Bootstrap API call reached the node (`detail`: `recover-from <local path>` or `plain`), accepted or
   * refused (`error`); see reference/etcd-recovery.md.
   */
  | 'etcd-bootstrap'
  /** EtcdRecover stored a snapshot on the node (`detail`: the local path talosctl uploaded). */
  | 'etcd-snapshot-uploaded'
  /** etcd started from the uploaded snapshot (`detail`: `revision N, total keys N`). */
  | 'etcd-restored'
  /** The recovery failed in etcd's PreFunc (`detail`: the service's error). */
  | 'etcd-restore-failed'
  /** A bootstrap started a second etcd cluster beside a running one (`detail`: the members of the other). */
  | 'etcd-split-brain'
  /** A wiped control plane's etcd gave up joining after `EtcdJoinTimeout`: its service is Failed until a reboot. */
  | 'etcd-join-timeout'
  /** etcd refused a second learner ("too many learner members in cluster"); Talos retries the add. */
  | 'etcd-learner-refused'
  /** A client set `reconcile.fluxcd.io/requestedAt` on a Flux object (`detail`: `<Kind> <ns>/<name> <token>`). */
  | 'flux-reconcile-requested';

export interface SimEvent {
  at: number;
  cluster: string;
  /** Node address. */
  node?: string;
  kind: SimEventKind;
  fromVersion?: string;
  toVersion?: string;
  detail?: string;
  /** The error an API call was refused with (`etcd-bootstrap`). */
  error?: string;
}

/** `prometheusrules.monitoring.coreos.com` (each with its alerts) and `servicemonitors.monitoring.coreos.com`. */
export interface MonitoringState {
  prometheusRules: { namespace: string; name: string; alerts: string[] }[];
  serviceMonitors: { namespace: string; name: string }[];
}
