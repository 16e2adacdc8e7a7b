/**
 * Fault injection. Every fault names nodes by address or hostname. Faults are observations layered
 * on top of the lifecycle model: setting one never runs a sequence, so clearing it restores the
 * cluster exactly as it was.
 */
import type { SnapshotDamage } from './etcd-snapshot-file.ts';
import type { CallRecord, SimNode, SimState } from './types.ts';

export interface ClusterFaults {
  /** No member has a leader: `etcd status` LEADER 0000000000000000 with `etcdserver: no leader`, etcd HEALTH Fail. */
  etcdNoLeader?: boolean;
  /** These members report themselves as leader while the rest agree on the real one. */
  etcdLeaderDisagreement?: string[];
  /** etcd service unhealthy on these nodes: HEALTH Fail with STATE `Running` or `Failed`. */
  etcdUnhealthy?: Record<string, 'Running' | 'Failed'>;
  /** Kubelet reports Ready=False. */
  nodeNotReady?: string[];
  /** spec.unschedulable with the unschedulable taint. */
  nodeCordoned?: string[];
  /** Network partition: talosctl gets Unavailable, Kubernetes shows Ready=Unknown, etcd members unhealthy. */
  nodeUnreachable?: string[];
  /**
   * Flux objects (Kustomization or HelmRelease names) that gave up: a Kustomization Stalled=True
   * AccessDenied, a HelmRelease Stalled=True RetriesExceeded after its one default attempt.
   */
  fluxStalled?: string[];
  /**
   * Flux objects failing for an hour, read between two retries: Ready=False with the failure's
   * reason and Reconciling=True ProgressingWithRetry, both stamped when the last attempt failed
   * (40 s ago: every retry flips Ready, so the transition is always fresh); a Kustomization's new
   * revision attempted and not applied, with the failure in its history.
   */
  fluxNotReady?: string[];
  /** Like `fluxNotReady`, but the first attempt failed half a minute ago. */
  fluxFailingRecently?: string[];
  /**
   * Flux objects failing for an hour, read at the start of a retry: Ready=Unknown "Reconciliation
   * in progress" and Reconciling=True Progressing, seconds old; only the revisions, the history
   * (Kustomization) or the failure count (HelmRelease) tell of the failed attempts.
   */
  fluxRetrying?: string[];
  /** Flux objects applying a new revision for the first time, with no failed attempt: Reconciling=True and Ready=Unknown, both Progressing. */
  fluxReconciling?: string[];
  /** Flux objects with spec.suspend=true and a stale Ready=True: the controller skips them. */
  fluxSuspended?: string[];
  /** PodDisruptionBudgets (by name) that allow no disruption. */
  pdbBlocked?: string[];
  /**
   * Workloads (Deployment, StatefulSet or DaemonSet name, e.g. `podinfo`, `cilium-operator`)
   * whose pods run but fail their readiness probe.
   */
  podsNotReady?: string[];
  /**
   * Workloads (as `podsNotReady`, or a bare pod's own name) whose container keeps exiting: the kubelet
   * restarts it with a back-off, so the pod stays Running, not ready, in CrashLoopBackOff
   * (reference/flux-health-cilium.md, "Crash-looping pods").
   */
  podsCrashLooping?: string[];
  /** Nodes whose Cilium agent (DaemonSet `kube-system/cilium`) is not ready. */
  ciliumAgentNotReady?: string[];
  /** Nodes whose Cilium Envoy pod (DaemonSet `kube-system/cilium-envoy`, Cilium ≥ 1.16) is not ready. */
  ciliumEnvoyNotReady?: string[];
  /** Longhorn's `node-drain-policy` setting, instead of the default `block-if-contains-last-replica`. */
  longhornDrainPolicy?: string;
  /** Longhorn replicas that failed: PVC name (e.g. `postgres-1`) → nodes whose replica of that volume failed. */
  longhornReplicaFailed?: Record<string, string[]>;
  /**
   * The rebuild of a node's replicas after it came back later than `since` (epoch ms), reported held
   * at `percent` (0–99), not complete, while set: for a test that must see a given progress before
   * the rebuild goes on. Earlier rebuilds are not held: the node's replicas are healthy before it.
   */
  longhornRebuildHeld?: { hostname: string; percent: number; since: number };
  /**
   * talosctl commands that never answer, by command path: `version`, `health`, `service`,
   * `service etcd`, `etcd status`, `etcd members`, `etcd snapshot`, `get members`, `upgrade`, ...
   * A key matches the command and its subcommands (`etcd` hangs every etcd command).
   */
  hang?: string[];
  /**
   * A test's hook, run before a talosctl call on the cluster is answered, with the call's command
   * path (`etcd status`, `upgrade`): the call waits until the hook settles, as a slow node would, and
   * is then answered under the faults in force at that moment. For tests that must act while a given
   * call is in flight, however fast or loaded the machine is.
   */
  holdCall?: (call: Readonly<CallRecord>, command: string) => Promise<void> | void;
  /** talosctl commands that fail: command path → stderr text (exit 1). */
  fail?: Record<string, string>;
  /**
   * talosctl commands that print this instead of their real answer, for output the bot has never
   * seen: command path → stdout text (exit 0), or the streams and exit code to print.
   */
  output?: Record<string, string | CannedOutput>;
  /** Kubernetes API path prefixes that never answer (e.g. `/api/v1/pods`). */
  kubeHang?: string[];
  /** Kubernetes API path prefixes that answer 500 InternalError. */
  kubeFail?: string[];
  /**
   * Upgrade API rejections: node (or `*`) → gRPC error description, e.g.
   * `error validating installer image "…": …`. Printed as `rpc error: code = Unknown desc = <text>`.
   */
  upgradeError?: Record<string, string>;
  /** The new image does not boot: the node comes back on the old version after `post check passed`. */
  upgradeSilentRevert?: string[];
  /** After the upgrade reboot the kubelet never gets Ready. */
  upgradeStaysNotReady?: string[];
  /** The upgrade sequence stalls in its `upgrade` phase and never reboots. */
  upgradeHang?: string[];
  /**
   * Upgrade requests of these nodes stay in their validation, holding the upgrade mutex, while the
   * node is listed (a slow etcd answering the validation): a second request meets the first one
   * still running. Cleared, the first request goes on as usual.
   */
  upgradeValidating?: string[];
  /** Extra downtime of an upgrade reboot: node → ms. */
  upgradeSlow?: Record<string, number>;
  /**
   * A test's hook, run when a node's upgrade reboot has been down its time: the node stays down
   * (rebooting) until the hook settles. For tests that must act while a node is down, however fast
   * or loaded the machine is.
   */
  holdReboot?: (node: Readonly<SimNode>) => Promise<void> | void;
  /** `rollback` reboots the node and it never comes back. */
  rollbackNoReturn?: string[];
  /**
   * Nodes that, while rebooting, do not answer at all rather than refusing connections: a talosctl
   * call whose only endpoints are such nodes waits until the caller gives up (talos#11830).
   */
  silentWhileRebooting?: string[];
  /**
   * Objects stored in the cluster per API resource (`resource.version.group`, e.g.
   * `podschedulingcontexts.v1alpha3.resource.k8s.io`): upgrade-k8s's checks count those the target removes.
   */
  k8sStoredResources?: Record<string, number>;
  /** Flags (without `--`) each node's Kubernetes components run with: node → component → flags. */
  k8sComponentFlags?: Record<string, Partial<Record<string, string[]>>>;
  /** The next `upgrade-k8s` run fails while updating the second kube-apiserver (consumed by that run). */
  upgradeK8sFailOnce?: boolean;
  /** Every `tofu output` fails with this error summary. */
  tofuOutputFail?: string;
  /** Output name → the value `tofu output` gives instead of the one derived from the model (e.g. a generic installer image). */
  tofuOutputs?: Record<string, string>;
  /** `tofu fmt -check` reports these files as unformatted (exit 3). */
  tofuFmtUnformatted?: string[];
  /**
   * What `tofu plan` finds on top of the difference between the declared inputs and the state.
   * Default: only that difference (none at start).
   */
  tofuPlan?: 'changes' | 'replace-secrets' | 'replace-vm' | 'error';
  /**
   * Resource address → the actions `tofu show -json` writes for it instead, e.g. `["Archive"]`: what a
   * newer OpenTofu's plan may hold (jsonplan `actionString` passes an unknown Action's name through).
   */
  tofuPlanActions?: Record<string, string[]>;
  /** `tofu apply` fails after its first resource with this error summary; the state is still written (serial + 1). */
  tofuApplyFail?: string;
  /**
   * A test's hook, run once `tofu apply` has printed its first line: the apply waits until it
   * settles. For a test that must see a line while the call is still running, however fast the apply.
   */
  tofuApplyFirstLine?: () => Promise<void>;
  /** New control planes (hostnames) that join etcd as learners and are not promoted while this is set. */
  etcdLearnerStuck?: string[];
  /** New nodes (hostnames) whose kubelet registers but never reports Ready. */
  newNodeNeverReady?: string[];
  /**
   * The ISO at the VMs' static Proxmox file ID (`isos:iso/talos-nocloud-amd64.iso`) is an older build
   * than the declared one: a VM Terraform creates or recreates boots it and, once configured, runs
   * this Talos version and schematic (reference/node-replacement.md, "The new node's version").
   */
  staleIso?: { version: string; schematic?: string };
  /**
   * The next `talosctl etcd snapshot` writes a damaged file (then the fault clears itself), e.g.
   * `flip-body-byte`: `snapshot info` still prints, the restore's sha256 check fails. See
   * etcd-snapshot-file.ts for where each damage fails.
   */
  snapshotDamage?: SnapshotDamage;
}

/** What a talosctl command prints under the `output` fault. */
export interface CannedOutput {
  stdout?: string;
  stderr?: string;
  /** Default 0. */
  exitCode?: number;
}

export type FaultName = keyof ClusterFaults;

/** The typed fault API exposed as `simulator.faults`. */
export class FaultController {
  readonly #state: SimState;

  constructor(state: SimState) {
    this.#state = state;
  }

  /** Merges `faults` into the cluster's faults (a key set to undefined clears it). */
  set(cluster: string, faults: ClusterFaults): void {
    const target = this.#cluster(cluster);
    for (const [key, value] of Object.entries(faults) as [FaultName, unknown][]) {
      if (value === undefined) delete target.faults[key];
      else (target.faults as Record<string, unknown>)[key] = value;
    }
  }

  /** Clears the named faults, or all of them. */
  clear(cluster: string, ...names: FaultName[]): void {
    const target = this.#cluster(cluster);
    if (names.length === 0) target.faults = {};
    for (const name of names) delete target.faults[name];
  }

  get(cluster: string): Readonly<ClusterFaults> {
    return this.#cluster(cluster).faults;
  }

  #cluster(name: string) {
    const cluster = this.#state.clusters[name];
    if (!cluster) throw new Error(`unknown simulated cluster ${JSON.stringify(name)}`);
    return cluster;
  }
}
