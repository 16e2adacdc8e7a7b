/**
 * Server-side machine sequences: upgrade, rollback, reset and the reboots between them. They run
 * on the simulator's clock, detached from the talosctl process that asked for them, exactly like
 * machined keeps going after the client disconnects.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  apidReachable,
  controlPlanes as controlPlanesOf,
  etcdMemberHealthy,
  etcdMembers,
  etcdVoters,
  hasQuorum,
  kubeApiAvailability,
  memberIdFor,
  named,
  namedValue,
} from './cluster-model.ts';
import { restoreHashCheck, statusOfBytes } from './etcd-snapshot-file.ts';
import {
  realEtcdBootstrap,
  realEtcdJoin,
  realEtcdKilled,
  realEtcdOf,
  realEtcdPromote,
  realEtcdRemove,
  realEtcdRestarted,
  realEtcdStopped,
  realEtcdWiped,
} from './etcd-real/attach.ts';
import type { Recorder } from './recorder.ts';
import { installerPreflight, parseInstallerImage, type InstallerImage } from './versions.ts';
import { nodePods } from './kube-seed.ts';
import { attachedNode, longhornOnDrain, longhornOnSchedulable } from './longhorn.ts';
import { drainNode, removePodsOf, schedulePending } from './workloads.ts';
import { cnpgOnCordon } from './cnpg.ts';
import { podReady } from './kube-objects.ts';
import { isCordoned, nodeReady } from './cluster-model.ts';
import type { MachineEvent, SimCluster, SimNode, SimState, SimTiming } from './types.ts';

export interface UpgradeRequest {
  image: string;
  stage: boolean;
  force: boolean;
  rebootMode: 'default' | 'powercycle';
}

export interface ResetRequest {
  graceful: boolean;
  reboot: boolean;
  /** `--system-labels-to-wipe`: wipe only these system volumes, keep the others. */
  systemLabelsToWipe?: string[];
  /** `--wipe-mode`. Default `all`. */
  wipeMode?: 'all' | 'system-disk' | 'user-disks';
}

/** System volume labels of a Talos ≥ 1.8 system disk (`reset --system-labels-to-wipe` looks them up). */
const SYSTEM_VOLUMES = ['EFI', 'BIOS', 'BOOT', 'META', 'STATE', 'EPHEMERAL'];

/** constants.EtcdRecoverySnapshotPath (pkg/machinery/constants v1.13.9). */
const RECOVERY_SNAPSHOT = '/var/lib/etcd.snapshot';
/** Between two real etcd calls Talos's loops retry (each is an etcdctl process): as services/etcd.go backs off. */
const REAL_ETCD_RETRY_MS = 250;

export type Acceptance = { actorId: string } | { error: string };

type Phase = readonly [phase: string, tasks: readonly string[]];

const UPGRADE_PHASES: readonly Phase[] = [
  ['drain', ['cordonAndDrainNode']],
  ['cleanup', ['stopAllPods']],
  ['dbus', ['stopDBus']],
  ['stopServices', ['stopServicesEphemeral']],
  ['unmount', ['unmountUserDisks']],
  ['unmountBind', ['unmountPodMounts']],
  ['unmountSystem', ['unmountEphemeralPartition']],
  ['volumeFinalize', ['teardownLifecycle']],
  ['upgrade', ['upgrade']],
  ['meta', ['reloadMeta']],
  ['kexec', ['kexecPrepare']],
  ['stopEverything', ['stopAllServices']],
];

/**
 * The reboot sequence (internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_sequencer.go v1.13.9,
 * `Reboot` with `stopAllPhaselist`), task names from v1alpha1_sequencer_tasks.go. It has no drain:
 * on the ≥ 1.13 upgrade path the client drains before it asks for the reboot.
 */
const REBOOT_PHASES: readonly Phase[] = [
  ['cleanup', ['stopAllPods']],
  ['dbus', ['stopDBus']],
  ['stopServices', ['stopServicesForUpgrade']],
  ['umount', ['unmountPodMounts']],
  ['unmountBind', ['unmountSystemDiskBindMounts']],
  ['unmountSystem', ['unmountEphemeralPartition']],
  ['volumeFinalize', ['teardownLifecycle']],
  ['kexec', ['kexecPrepare']],
  ['stopEverything', ['stopAllServices']],
];

/** Result of one LifecycleService.Upgrade stream: the installer's exit code, or the gRPC error. */
export type InstallResult = { exitCode: number } | { error: string };

const CLOSED = Symbol('simulator closed');

/** Go's `log` prefix, `2006/01/02 15:04:05` in UTC. */
function goLogTime(now: Date): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${now.getUTCFullYear()}/${two(now.getUTCMonth() + 1)}/${two(now.getUTCDate())} ${two(now.getUTCHours())}:${two(now.getUTCMinutes())}:${two(now.getUTCSeconds())}`;
}

function isClosed(error: unknown): boolean {
  return error === CLOSED;
}

export class Lifecycle {
  readonly #state: SimState;
  readonly #timing: SimTiming;
  readonly #recorder: Recorder;
  readonly #closing = new AbortController();
  #seq = 0;
  /** Nodes whose LifecycleService lock is held: an installer runs there (internal/app/lifecycle/lifecycle.go v1.13.9). */
  readonly #installing = new Set<SimNode>();
  /** An image LifecycleService.Upgrade installed and made the boot default, not booted yet: the next reboot boots it. */
  readonly #installed = new WeakMap<SimNode, InstallerImage>();

  constructor(state: SimState, timing: SimTiming, recorder: Recorder) {
    this.#state = state;
    this.#timing = timing;
    this.#recorder = recorder;
  }

  close(): void {
    this.#closing.abort();
  }

  /** Resolves after `ms`, or rejects once the simulator shuts down. */
  sleep(ms: number): Promise<void> {
    const signal = this.#closing.signal;
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(CLOSED);
        return;
      }
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(CLOSED);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A sequence step that never finishes; only shutting the simulator down ends it. */
  #forever(): Promise<never> {
    const signal = this.#closing.signal;
    return new Promise((_, reject) => {
      if (signal.aborted) reject(CLOSED);
      signal.addEventListener('abort', () => reject(CLOSED), { once: true });
    });
  }

  publish(node: SimNode, event: Omit<MachineEvent, 'seq' | 'at'>): void {
    node.events.push({ ...event, seq: ++this.#seq, at: Date.now() });
  }

  #spawn(work: () => Promise<void>): void {
    work().catch((error: unknown) => {
      if (!isClosed(error)) console.error('simulated machine sequence crashed', error);
    });
  }

  #stage(cluster: SimCluster, node: SimNode, stage: SimNode['stage']): void {
    node.stage = stage;
    this.#recorder.noteControlPlanes(cluster);
  }

  #knownImage(ref: string): InstallerImage | undefined {
    const image = parseInstallerImage(ref);
    const known =
      image &&
      this.#state.factoryVersions.includes(image.version) &&
      (image.schematic === undefined || this.#state.schematics[image.schematic] !== undefined);
    return known ? image : undefined;
  }

  #validateImage(ref: string): InstallerImage | string {
    return (
      this.#knownImage(ref) ??
      `error validating installer image ${JSON.stringify(ref)}: failed to resolve reference ${JSON.stringify(ref)}: ${ref}: not found`
    );
  }

  /**
   * ImageService.Pull (internal/app/images/images.go v1.13.9): the reference pinned to its digest,
   * as `name@sha256:…` (a tag is dropped), or NotFound at once.
   */
  pullImage(ref: string): { name: string } | { error: string } {
    if (this.#knownImage(ref) === undefined) {
      return {
        error: `rpc error: code = NotFound desc = error pulling image: failed to resolve reference ${JSON.stringify(ref)}: ${ref}: not found`,
      };
    }
    const name = ref.replace(/:[^:/@]+$/, '');
    return { name: `${name}@sha256:${createHash('sha256').update(ref).digest('hex')}` };
  }

  /**
   * LifecycleService.Upgrade (internal/app/lifecycle/lifecycle.go v1.13.9): the per-node lock, then
   * the installer container, its output streamed line by line, and its exit code. No etcd check and
   * no upgrade mutex: nothing here refuses an upgrade that would lose quorum. A successful install
   * makes the new image the boot default; the node keeps running until something reboots it.
   */
  async installUpgrade(cluster: SimCluster, node: SimNode, ref: string, send: (message: string) => void): Promise<InstallResult> {
    if (this.#installing.has(node))
      return { error: 'rpc error: code = FailedPrecondition desc = another installation/upgrade is already in progress' };
    const injected = namedValue(cluster.faults.upgradeError, node);
    if (injected) {
      this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'upgrade-rejected', detail: injected });
      return { error: `rpc error: code = Internal desc = upgrade failed: ${injected}` };
    }
    const image = this.#knownImage(ref);
    if (image === undefined) {
      return {
        error: `rpc error: code = Internal desc = upgrade failed: installer image ${JSON.stringify(ref)} not found in containerd store: not found`,
      };
    }
    this.#installing.add(node);
    try {
      this.#recorder.event({
        cluster: cluster.name,
        node: node.address,
        kind: 'upgrade-start',
        fromVersion: node.talosVersion,
        toVersion: image.version,
      });
      // The installer logs through Go's log package (cmd/installer, pkg/install/preflight.go v1.13.9).
      const log = (text: string): void => send(`${goLogTime(new Date())} ${text}\n`);
      await this.sleep(this.#timing.stepMs);
      log(`running Talos installer ${image.version}`);
      log('running pre-flight checks');
      log(`host Talos version: ${node.talosVersion}`);
      if (named(cluster.faults.upgradeHang, node)) await this.#forever();
      const preflight = installerPreflight(node.talosVersion, image.version, node.kubeletVersion);
      if (preflight) {
        send(`pre-flight checks failed: ${preflight}\n`);
        this.#recorder.event({
          cluster: cluster.name,
          node: node.address,
          kind: 'upgrade-failed',
          fromVersion: node.talosVersion,
          toVersion: image.version,
          detail: preflight,
        });
        return { exitCode: 1 };
      }
      log('all pre-flight checks successful');
      await this.sleep(this.#timing.stepMs);
      log(`installation of ${image.version} complete`);
      this.#installed.set(node, image);
      return { exitCode: 0 };
    } finally {
      this.#installing.delete(node);
    }
  }

  /** The image installed and not booted yet, if any. */
  installedNotBooted(node: SimNode): InstallerImage | undefined {
    return this.#installed.get(node);
  }

  /**
   * The drain talosctl ≥ 1.13 runs itself (cmd/talosctl/pkg/talos/nodedrain/nodedrain.go v1.13.9,
   * kubectl's drain library k8s.io/kubectl v0.36 pkg/drain/drain.go): cordon, then evictions
   * through the budgets, each refused one retried until the timeout. DaemonSet and mirror pods
   * are left (IgnoreAllDaemonSets). A timeout returns the kubectl error and leaves the node
   * cordoned; nothing uncordons it. Reports each step as `<node name>: <message>`.
   */
  async clientDrain(
    cluster: SimCluster,
    node: SimNode,
    timeoutMs: number,
    timeoutText: string,
    report: (message: string) => void,
  ): Promise<string | undefined> {
    const started = Date.now();
    report('cordoning node');
    node.cordoned = true;
    node.cordonedByTalos = false;
    report('node cordoned');
    report('draining node');
    const asked = new Set<string>();
    const blocked = new Map<string, string>();
    for (;;) {
      blocked.clear();
      drainNode(cluster, node, Date.now(), () => longhornOnDrain(cluster, this.#state, this.#timing, node, this.#recorder, Date.now()), {
        onEviction: (pod, refusedBy) => {
          const id = `${pod.namespace}/${pod.name}`;
          // Started again on every retry; the reporter prints a line only when it differs from the last.
          if (!asked.has(id)) report(`evicting pod ${id}`);
          asked.add(id);
          if (refusedBy === undefined) report(`evicted pod ${id}`);
          else blocked.set(id, refusedBy);
        },
      });
      if (blocked.size === 0) {
        report('node drained');
        return undefined;
      }
      if (Date.now() - started >= timeoutMs) break;
      await this.sleep(Math.max(2, Math.min(this.#timing.stepMs, 20)));
    }
    for (const budget of new Set(blocked.values()))
      this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'drain-blocked', detail: budget });
    const errors = [...blocked.keys()].map((id) => {
      const [namespace, name] = id.split('/');
      return `error when evicting pods/${JSON.stringify(name)} -n ${JSON.stringify(namespace)}: global timeout reached: ${timeoutText}`;
    });
    // utilerrors.NewAggregate: one error as itself, several as `[a, b]`.
    const aggregate = errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`;
    return `error draining node ${JSON.stringify(node.hostname)}: ${aggregate}`;
  }

  /**
   * `kubectl cordon` through the API (`PATCH nodes/<name>`): the node unschedulable, and what
   * watches that reacts — CloudNativePG switches a primary away (cnpg.ts `cnpgOnCordon`).
   */
  cordonByApi(cluster: SimCluster, node: SimNode): void {
    node.cordoned = true;
    node.cordonedByTalos = false;
    cnpgOnCordon(cluster, node, Date.now(), podReady);
  }

  /**
   * Longhorn's controllers on a cordoned node, as an API client finds them when it asks for an
   * eviction: replicas evicted where the policy says so, the instance-manager budget lifted when it allows.
   */
  reconcileCordoned(cluster: SimCluster, node: SimNode): void {
    if (isCordoned(cluster, node)) longhornOnDrain(cluster, this.#state, this.#timing, node, this.#recorder, Date.now());
  }

  /** `nodedrain.Uncordon`: the node schedulable again, and what follows from that (Longhorn's budget, Pending pods). */
  uncordon(cluster: SimCluster, node: SimNode): void {
    node.cordoned = false;
    node.cordonedByTalos = false;
    if (!isCordoned(cluster, node)) longhornOnSchedulable(cluster, node, this.#recorder);
    schedulePending(cluster, Date.now());
  }

  /** Whether Kubernetes reports the node Ready (nodedrain.WaitForNodeReady). */
  kubeReady(cluster: SimCluster, node: SimNode): boolean {
    return node.k8sRegistered && nodeReady(cluster, node) === 'True';
  }

  /**
   * The Reboot API (v1alpha1_server.go v1.13.9): the reboot sequence in the background under an
   * actor ID. A node with an installed, not yet booted image boots it (its boot default).
   */
  requestReboot(cluster: SimCluster, node: SimNode): Acceptance {
    if (node.stage !== 'running') return { error: 'rpc error: code = Unknown desc = failed to run sequence: locked' };
    const actorId = randomUUID();
    this.#stage(cluster, node, 'upgrading');
    this.#spawn(async () => {
      const say = (kind: MachineEvent['kind'], text: string, extra: Partial<MachineEvent> = {}): void =>
        this.publish(node, { actorId, kind, text, ...extra });
      const fromVersion = node.talosVersion;
      const fromSchematic = node.schematic;
      say('sequence', 'sequence: reboot action: START');
      for (const [phase, tasks] of REBOOT_PHASES) {
        await this.sleep(this.#timing.stepMs);
        say('phase', `phase: ${phase} action: START`);
        for (const task of tasks) {
          say('task', `task: ${task} action: START`, { task });
          if (task === 'stopServicesForUpgrade') {
            node.servicesStopped = true;
            this.#recorder.noteControlPlanes(cluster);
          }
          if (task === 'stopAllServices') {
            await this.sleep(this.#timing.stepMs);
            const image = this.#installed.get(node);
            this.#installed.delete(node);
            if (image) await this.#rebootAfterUpgrade(cluster, node, image, fromVersion, fromSchematic);
            else await this.#reboot(cluster, node, { version: fromVersion, schematic: fromSchematic, platformOk: true });
            return;
          }
          say('task', `task: ${task} action: STOP`, { task });
        }
        say('phase', `phase: ${phase} action: STOP`);
      }
    });
    return { actorId };
  }

  /** The Upgrade API: validation under the upgrade mutex, then the sequence in the background. */
  async requestUpgrade(cluster: SimCluster, node: SimNode, request: UpgradeRequest): Promise<Acceptance> {
    const reject = (desc: string): Acceptance => {
      this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'upgrade-rejected', detail: desc });
      return { error: `rpc error: code = Unknown desc = ${desc}` };
    };
    const injected = namedValue(cluster.faults.upgradeError, node);
    if (injected) return reject(injected);
    if (node.stage !== 'running') return reject('failed to run sequence: locked');
    const image = this.#validateImage(request.image);
    if (typeof image === 'string') return reject(image);
    if (node.role === 'controlplane' && !request.force) {
      // One session at a time, even a second request for the same node.
      const holder = cluster.etcd.upgradeMutexHolder;
      if (holder) {
        return reject('failed to acquire upgrade mutex: mutex: Locked by another session');
      }
      cluster.etcd.upgradeMutexHolder = node.address;
      try {
        // The mutex is held across etcd's validation (`Upgrade`, v1alpha1_server.go v1.13.9): a slow etcd keeps it held.
        while (named(cluster.faults.upgradeValidating, node)) await this.sleep(5);
        await this.sleep(this.#timing.stepMs);
        const problem = this.#etcdUpgradeProblem(cluster);
        if (problem) return reject(`error validating etcd for upgrade: ${problem}`);
      } finally {
        if (cluster.etcd.upgradeMutexHolder === node.address) delete cluster.etcd.upgradeMutexHolder;
      }
      if (node.stage !== 'running') return reject('failed to run sequence: locked');
    }
    const actorId = randomUUID();
    this.#recorder.event({
      cluster: cluster.name,
      node: node.address,
      kind: 'upgrade-start',
      fromVersion: node.talosVersion,
      toVersion: image.version,
    });
    this.#stage(cluster, node, 'upgrading');
    this.#spawn(() => this.#runUpgrade(cluster, node, actorId, image, request));
    return { actorId };
  }

  /** The drain of a cordoned node, with Longhorn deciding about its budget once the workloads are gone; refusals are recorded. */
  #drain(cluster: SimCluster, node: SimNode): void {
    const refused = drainNode(cluster, node, Date.now(), () =>
      longhornOnDrain(cluster, this.#state, this.#timing, node, this.#recorder, Date.now()),
    );
    for (const budget of refused)
      this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'drain-blocked', detail: budget });
  }

  /** etcd.ValidateForUpgrade: a two-member cluster or any unhealthy member blocks the upgrade. */
  #etcdUpgradeProblem(cluster: SimCluster): string | undefined {
    const members = etcdVoters(cluster);
    if (members.length === 2) {
      return `etcd member count(${members.length}) is insufficient to maintain quorum if upgrade commences`;
    }
    for (const member of members) {
      if (!etcdMemberHealthy(cluster, member)) {
        return `etcd member ${member.etcdMemberId} is not healthy; all members must be healthy to perform an upgrade: context deadline exceeded`;
      }
    }
    return undefined;
  }

  async #runUpgrade(cluster: SimCluster, node: SimNode, actorId: string, image: InstallerImage, request: UpgradeRequest): Promise<void> {
    const sequence = request.stage ? 'stageUpgrade' : 'upgrade';
    const fromVersion = node.talosVersion;
    const fromSchematic = node.schematic;
    const say = (kind: MachineEvent['kind'], text: string, extra: Partial<MachineEvent> = {}): void =>
      this.publish(node, { actorId, kind, text, ...extra });
    say('sequence', `sequence: ${sequence} action: START`);
    const phases = UPGRADE_PHASES.filter(([phase]) => !(phase === 'kexec' && request.rebootMode === 'powercycle'));
    for (const [index, [phase, tasks]] of phases.entries()) {
      await this.sleep(this.#timing.stepMs);
      say('phase', `phase: ${phase} action: START`);
      for (const task of tasks) {
        say('task', `task: ${task} action: START`, { task });
        if (task === 'stopAllServices') {
          await this.sleep(this.#timing.stepMs);
          await this.#rebootAfterUpgrade(cluster, node, image, fromVersion, fromSchematic);
          return;
        }
        if (task === 'cordonAndDrainNode') {
          if (!node.cordoned) {
            node.cordoned = true;
            node.cordonedByTalos = true;
          }
          this.#drain(cluster, node);
        }
        if (task === 'stopServicesEphemeral') {
          node.servicesStopped = true;
          this.#recorder.noteControlPlanes(cluster);
        }
        if (task === 'upgrade') {
          if (named(cluster.faults.upgradeHang, node)) await this.#forever();
          const preflight = installerPreflight(fromVersion, image.version, node.kubeletVersion);
          if (preflight) {
            const message = `error running phase ${index + 1} in ${sequence} sequence: task 1/1: failed, error running installer: pre-flight checks failed: ${preflight}`;
            // talosctl's tracker prints message and code in swapped slots; reproduced on purpose.
            say('sequence', `sequence: ${sequence} action: STOP error: [code: ${message} message: FATAL]`, { error: message });
            this.#recorder.event({
              cluster: cluster.name,
              node: node.address,
              kind: 'upgrade-failed',
              fromVersion,
              toVersion: image.version,
              detail: preflight,
            });
            // The sequence already stopped every service, so machined reboots into the untouched slot.
            await this.sleep(this.#timing.stepMs);
            await this.#reboot(cluster, node, { version: fromVersion, schematic: fromSchematic, platformOk: true });
            return;
          }
        }
        say('task', `task: ${task} action: STOP`, { task });
      }
      say('phase', `phase: ${phase} action: STOP`);
    }
  }

  async #rebootAfterUpgrade(
    cluster: SimCluster,
    node: SimNode,
    image: InstallerImage,
    fromVersion: string,
    fromSchematic: string,
  ): Promise<void> {
    const reverts = named(cluster.faults.upgradeSilentRevert, node);
    const extraDownMs = namedValue(cluster.faults.upgradeSlow, node) ?? 0;
    const staysNotReady = named(cluster.faults.upgradeStaysNotReady, node);
    const schematic = image.schematic ?? this.#stockSchematic();
    if (reverts) {
      // The new slot failed to boot; the bootloader fell back to the old one.
      node.fallbackVersion = image.version;
      node.fallbackSchematic = schematic;
      await this.#reboot(cluster, node, { version: fromVersion, schematic: fromSchematic, platformOk: true, extraDownMs, staysNotReady });
      return;
    }
    node.fallbackVersion = fromVersion;
    node.fallbackSchematic = fromSchematic;
    // A generic installer renames eth0, so the node boots but loses its configured address.
    const platformOk = image.platform === node.platform;
    await this.#reboot(cluster, node, { version: image.version, schematic, platformOk, extraDownMs, staysNotReady });
  }

  #stockSchematic(): string {
    return Object.keys(this.#state.schematics).find((id) => (this.#state.schematics[id] ?? []).length === 0) ?? '';
  }

  async #reboot(
    cluster: SimCluster,
    node: SimNode,
    target: {
      version: string;
      schematic: string;
      platformOk: boolean;
      extraDownMs?: number;
      staysNotReady?: boolean;
      neverReturns?: boolean;
    },
  ): Promise<void> {
    node.servicesStopped = true;
    this.#stage(cluster, node, 'rebooting');
    this.#recorder.event({
      cluster: cluster.name,
      node: node.address,
      kind: 'reboot',
      fromVersion: node.talosVersion,
      toVersion: target.version,
    });
    await this.sleep(this.#timing.rebootMs + (target.extraDownMs ?? 0));
    await cluster.faults.holdReboot?.(node);
    if (target.neverReturns) {
      this.#stage(cluster, node, 'lost');
      this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'lost', detail: 'did not come back after reboot' });
      return;
    }
    node.talosVersion = target.version;
    node.schematic = target.schematic;
    node.bootId = randomUUID();
    node.bootedAt = Date.now();
    node.events = [];
    node.servicesStopped = false;
    node.kubeletNotReady = target.staysNotReady ?? false;
    this.#stage(cluster, node, 'booting');
    if (!target.platformOk) {
      this.#stage(cluster, node, 'lost');
      this.#recorder.event({
        cluster: cluster.name,
        node: node.address,
        kind: 'lost',
        detail: 'network interface renamed by a generic installer',
      });
      return;
    }
    const notReady = `[name:"nodeReady" reason:"node \\"${node.hostname}\\" is not ready"]`;
    const boot = (kind: MachineEvent['kind'], text: string, extra: Partial<MachineEvent> = {}): void =>
      this.publish(node, { actorId: '', kind, text, ...extra });
    boot('status', `stage: BOOTING ready: false unmetCond: ${notReady}`, { stage: 'BOOTING', ready: false });
    await this.sleep(this.#timing.bootMs / 2);
    if (node.role === 'controlplane') boot('service', 'service: etcd message: Health check successful healthy: true');
    boot('service', 'service: kubelet message: Health check successful healthy: true');
    await this.sleep(this.#timing.bootMs / 2);
    const ready = !node.kubeletNotReady && !named(cluster.faults.nodeNotReady, node);
    boot('status', `stage: BOOTING ready: ${ready} unmetCond: ${ready ? '[]' : notReady}`, { stage: 'BOOTING', ready });
    boot('task', 'task: startAllServices action: STOP', { task: 'startAllServices' });
    boot('phase', 'phase: startEverything action: STOP');
    boot('sequence', 'sequence: boot action: STOP');
    node.lastUpAt = Date.now();
    if (node.cordonedByTalos) {
      node.cordoned = false;
      node.cordonedByTalos = false;
    }
    node.k8sRegistered = true;
    if (!node.cordoned) longhornOnSchedulable(cluster, node, this.#recorder);
    this.#stage(cluster, node, 'running');
    schedulePending(cluster, Date.now());
    this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'up', toVersion: node.talosVersion });
    boot('status', `stage: RUNNING ready: ${ready} unmetCond: ${ready ? '[]' : notReady}`, { stage: 'RUNNING', ready });
  }

  /** The Rollback API: flips the A/B entry and reboots asynchronously. Returns an error text or undefined. */
  requestRollback(cluster: SimCluster, node: SimNode): string | undefined {
    if (!node.fallbackVersion || !node.fallbackSchematic) {
      return 'rpc error: code = Unknown desc = cannot rollback to previous version: no fallback entry found';
    }
    if (node.stage !== 'running') return 'rpc error: code = Unknown desc = failed to run sequence: locked';
    const toVersion = node.fallbackVersion;
    const toSchematic = node.fallbackSchematic;
    node.fallbackVersion = node.talosVersion;
    node.fallbackSchematic = node.schematic;
    this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'rollback', fromVersion: node.talosVersion, toVersion });
    const neverReturns = named(cluster.faults.rollbackNoReturn, node);
    this.#spawn(async () => {
      await this.sleep(this.#timing.stepMs);
      await this.#reboot(cluster, node, { version: toVersion, schematic: toSchematic, platformOk: true, neverReturns });
    });
    return undefined;
  }

  /**
   * The Reset API (internal/app/machined/internal/server/v1alpha1/v1alpha1_server.go v1.13.9 `Reset`):
   * the request is validated, then the reset sequence runs in the background under an actor ID.
   * Each system label to wipe must name a volume the node has (a COSI NotFound otherwise).
   */
  async requestReset(cluster: SimCluster, node: SimNode, request: ResetRequest): Promise<Acceptance> {
    const labels = request.systemLabelsToWipe ?? [];
    if (labels.length > 0) {
      if (request.wipeMode === 'user-disks') {
        return {
          error:
            "rpc error: code = Unknown desc = reset failed: invalid input, wipe mode USER_DISKS doesn't support SystemPartitionsToWipe parameter",
        };
      }
      const unknown = labels.find((label) => !SYSTEM_VOLUMES.includes(label));
      if (unknown !== undefined) {
        return {
          error: `rpc error: code = Unknown desc = failed to get volume status with label ${JSON.stringify(unknown)}: resource VolumeStatuses.block.talos.dev(runtime/${unknown}@undefined) doesn't exist`,
        };
      }
    }
    // Reset may take over a boot sequence (sequencer.go `CanTakeOver`); the simulator lets it take over
    // the boots that wait on etcd (joining, or failed), whose routine steps aside when the boot ID changes.
    if (node.stage !== 'running' && !this.#bootWaitingOnEtcd(node)) {
      return { error: 'rpc error: code = Unknown desc = failed to run sequence: locked' };
    }
    const actorId = randomUUID();
    this.#stage(cluster, node, 'resetting');
    this.#spawn(() => this.#runReset(cluster, node, actorId, request));
    return { actorId };
  }

  /** A boot that waits on etcd: joining, or Failed after the join limit or a failed recovery. */
  #bootWaitingOnEtcd(node: SimNode): boolean {
    return node.stage === 'booting' && (node.etcdWaitingJoin === true || node.etcdFailed !== undefined);
  }

  /**
   * The reset sequence (v1alpha1_sequencer.go v1.13.9 `Reset`, task names from
   * v1alpha1_sequencer_tasks.go): drain and leave etcd only when graceful, the services stopped,
   * then the wipe and a reboot or power-off. Wiping only labelled system volumes keeps BOOT, so the
   * node reboots through kexec; wiping EPHEMERAL only (the disaster-recovery step) keeps STATE, so
   * the machine boots with its configuration and an empty `/var/lib/etcd`.
   */
  async #runReset(cluster: SimCluster, node: SimNode, actorId: string, request: ResetRequest): Promise<void> {
    const say = (kind: MachineEvent['kind'], text: string, extra: Partial<MachineEvent> = {}): void =>
      this.publish(node, { actorId, kind, text, ...extra });
    const labels = request.systemLabelsToWipe ?? [];
    const mode = request.wipeMode ?? 'all';
    const resetSystemDisk = mode === 'all' || mode === 'system-disk';
    const withKexec = labels.length > 0 && !labels.includes('BOOT');
    const when = (condition: boolean, phase: Phase): Phase[] => (condition ? [phase] : []);
    const phases: Phase[] = [
      ...when(request.graceful, ['drain', ['cordonAndDrainNode']]),
      request.graceful ? ['cleanup', ['removeAllPods']] : ['cleanup', ['stopAllPods']],
      ['dbus', ['stopDBus']],
      ...when(request.graceful && node.role === 'controlplane', ['leave', ['leaveEtcd']]),
      ['preReset', ['sendResetSignal']],
      ['stopServices', ['stopServicesForUpgrade']],
      ['umount', ['unmountPodMounts']],
      ['unmountBind', ['unmountSystemDiskBindMounts']],
      ['unmountSystem', ['unmountEphemeralPartition']],
      ['volumeFinalize', ['teardownLifecycle']],
      ...when(withKexec, ['kexec', ['kexecPrepare']]),
      ['stopEverything', ['stopAllServices']],
    ];
    // What the wipe leaves: STATE (the machine configuration) survives when only other labels are wiped.
    const wipesEphemeral = labels.length === 0 ? resetSystemDisk : resetSystemDisk && labels.includes('EPHEMERAL');
    const keepsConfig = labels.length > 0 && !labels.includes('STATE');
    say('sequence', 'sequence: reset action: START');
    for (const [index, [phase, tasks]] of phases.entries()) {
      await this.sleep(this.#timing.stepMs);
      say('phase', `phase: ${phase} action: START`);
      for (const task of tasks) {
        say('task', `task: ${task} action: START`, { task });
        if (task === 'cordonAndDrainNode') {
          node.cordoned = true;
          this.#drain(cluster, node);
        }
        if (task === 'leaveEtcd') {
          if (etcdMembers(cluster).length <= 1) {
            const message = `error running phase ${index + 1} in reset sequence: task 1/1: failed, failed to leave cluster: etcdserver: re-configuration failed due to not enough started members`;
            say('sequence', `sequence: reset action: STOP error: [code: ${message} message: FATAL]`, { error: message });
            this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'reset-failed', detail: message });
            this.#stage(cluster, node, 'running');
            return;
          }
          // With real etcd the member leaves through MemberRemove and its strict check.
          const refused = node.etcdMemberId === undefined ? undefined : await realEtcdRemove(cluster, node.etcdMemberId);
          if (refused !== undefined) {
            const message = `error running phase ${index + 1} in reset sequence: task 1/1: failed, failed to leave cluster: ${refused}`;
            say('sequence', `sequence: reset action: STOP error: [code: ${message} message: FATAL]`, { error: message });
            this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'reset-failed', detail: message });
            this.#stage(cluster, node, 'running');
            return;
          }
          node.etcdMember = false;
        }
        if (task === 'stopServicesForUpgrade') {
          // Not awaited: the sequence's pace stays the model's; the wipe that follows waits for the process.
          void realEtcdStopped(cluster, node);
          node.servicesStopped = true;
          this.#recorder.noteControlPlanes(cluster);
        }
        if (task === 'stopAllServices') {
          await this.sleep(this.#timing.stepMs);
          this.#recorder.event({
            cluster: cluster.name,
            node: node.address,
            kind: 'reset',
            fromVersion: node.talosVersion,
            detail: labels.length > 0 ? labels.join(',') : mode,
          });
          if (wipesEphemeral) {
            this.#wipeEphemeral(cluster, node);
            if (node.role === 'controlplane') await realEtcdWiped(cluster, node);
          }
          if (!keepsConfig) node.discoveryMember = false;
          if (!request.reboot) {
            this.#stage(cluster, node, 'off');
            return;
          }
          if (keepsConfig) {
            await this.#rebootKeepingConfig(cluster, node);
            return;
          }
          this.#stage(cluster, node, 'rebooting');
          await this.sleep(this.#timing.rebootMs);
          node.bootId = randomUUID();
          node.events = [];
          this.#stage(cluster, node, 'maintenance');
          return;
        }
        say('task', `task: ${task} action: STOP`, { task });
      }
      say('phase', `phase: ${phase} action: STOP`);
    }
  }

  /**
   * EPHEMERAL holds `/var/lib`: etcd's data directory and an uploaded recovery snapshot go with it.
   * The member stays in the other members' list (a non-graceful reset does not leave) until the
   * node's etcd rejoins and `addMember` removes it by name (services/etcd.go v1.13.9).
   */
  #wipeEphemeral(cluster: SimCluster, node: SimNode): void {
    // The instance manager and its engines ran from EPHEMERAL: the volumes they served detach.
    for (const volume of cluster.kube.volumes) {
      if (!volume.detached && attachedNode(cluster, volume) === node.hostname) {
        volume.attachedTo = node.hostname;
        volume.engineLostAt = Date.now();
      }
    }
    if (node.role !== 'controlplane') return;
    node.etcdDataEmpty = true;
    delete node.etcdFailed;
    delete node.etcdRestoring;
    delete node.recoverySnapshot;
  }

  /**
   * The reboot after a reset that kept STATE: the machine boots with its configuration. A control
   * plane with an empty etcd data directory enters etcd's join loop (Preparing) and its boot
   * sequence waits there: it joins a running etcd cluster as a learner, or waits for a bootstrap.
   */
  async #rebootKeepingConfig(cluster: SimCluster, node: SimNode): Promise<void> {
    this.#stage(cluster, node, 'rebooting');
    this.#recorder.event({
      cluster: cluster.name,
      node: node.address,
      kind: 'reboot',
      fromVersion: node.talosVersion,
      toVersion: node.talosVersion,
    });
    await this.sleep(this.#timing.rebootMs);
    const bootId = randomUUID();
    node.bootId = bootId;
    node.bootedAt = Date.now();
    node.events = [];
    node.servicesStopped = false;
    node.kubeletNotReady = false;
    node.discoveryMember = true;
    if (node.role === 'controlplane' && node.etcdDataEmpty) {
      // The service starts over: a Failed etcd (the join limit) is back in the join loop.
      delete node.etcdFailed;
      node.etcdWaitingJoin = true;
      node.etcdServiceSince = node.bootedAt;
    }
    this.#stage(cluster, node, 'booting');
    const notReady = `[name:"nodeReady" reason:"node \\"${node.hostname}\\" is not ready"]`;
    const boot = (kind: MachineEvent['kind'], text: string, extra: Partial<MachineEvent> = {}): void =>
      this.publish(node, { actorId: '', kind, text, ...extra });
    boot('status', `stage: BOOTING ready: false unmetCond: ${notReady}`, { stage: 'BOOTING', ready: false });
    await this.sleep(this.#timing.bootMs / 2);
    boot('service', 'service: kubelet message: Health check successful healthy: true');
    if (node.role === 'controlplane') {
      const joinSince = node.etcdServiceSince ?? node.bootedAt;
      while (node.bootId === bootId && node.etcdWaitingJoin) {
        const reachable = hasQuorum(cluster) && etcdMembers(cluster).some((m) => m !== node && etcdMemberHealthy(cluster, m));
        if (reachable && !this.#learnerRefused(cluster, node)) {
          const realId = await realEtcdJoin(
            cluster,
            node,
            () => this.sleep(REAL_ETCD_RETRY_MS),
            () => node.bootId !== bootId,
          );
          if (node.bootId !== bootId) return;
          this.#joinAsLearner(cluster, node, realId);
          break;
        }
        if (Date.now() - joinSince >= this.#timing.etcdJoinTimeoutMs) {
          this.#joinTimedOut(cluster, node);
          break;
        }
        await this.sleep(this.#timing.stepMs);
      }
      // A failed recovery leaves the boot sequence waiting on etcd.
      while (node.bootId === bootId && (node.etcdFailed !== undefined || node.etcdWaitingJoin || node.etcdRestoring)) {
        await this.sleep(this.#timing.stepMs);
      }
      if (node.bootId !== bootId || node.stage !== 'booting') return;
      boot('service', 'service: etcd message: Health check successful healthy: true');
    }
    await this.sleep(this.#timing.bootMs / 2);
    if (node.bootId !== bootId || node.stage !== 'booting') return;
    const ready = !named(cluster.faults.nodeNotReady, node);
    node.lastUpAt = Date.now();
    node.k8sRegistered = true;
    if (!node.cordoned) longhornOnSchedulable(cluster, node, this.#recorder);
    this.#stage(cluster, node, 'running');
    schedulePending(cluster, Date.now());
    this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'up', toVersion: node.talosVersion });
    boot('task', 'task: startAllServices action: STOP', { task: 'startAllServices' });
    boot('phase', 'phase: startEverything action: STOP');
    boot('sequence', 'sequence: boot action: STOP');
    boot('status', `stage: RUNNING ready: ${ready} unmetCond: ${ready ? '[]' : notReady}`, { stage: 'RUNNING', ready });
  }

  /**
   * `buildInitialCluster` ran out of `EtcdJoinTimeout` (services/etcd.go v1.13.9 and v1.14.0-rc.1): the
   * pre-stage fails and the service is Failed; etcd is not restartable through the API (it implements
   * none of system's APIStartableService/APIRestartableService), so it stays Failed until a reboot or a
   * reset. The message is go-retry v0.3.3's ErrorSet of its one TimeoutError, wrapped twice.
   */
  #joinTimedOut(cluster: SimCluster, node: SimNode): void {
    node.etcdWaitingJoin = false;
    node.etcdFailed =
      'Failed to run pre stage: failed to build initial etcd cluster: failed to build cluster arguments: 1 error(s) occurred:\n\ttimeout';
    this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'etcd-join-timeout', detail: node.hostname });
  }

  /** The boot in which each node last had its learner add refused, so the refusal is recorded once per boot. */
  readonly #learnerRefusedIn = new WeakMap<SimNode, string>();

  /**
   * etcd admits one learner at a time (etcd-io/etcd v3.6.12 server/etcdserver/api/membership/cluster_opts.go
   * `DefaultMaxLearners = 1`): while another member is a learner, `MemberAddAsLearner` fails "etcdserver:
   * too many learner members in cluster" and Talos's `addMember` retries (services/etcd.go v1.13.9).
   */
  #learnerRefused(cluster: SimCluster, node: SimNode): boolean {
    const learner = etcdMembers(cluster).find((m) => m !== node && m.etcdLearner === true);
    if (learner === undefined) return false;
    if (this.#learnerRefusedIn.get(node) !== node.bootId) {
      this.#learnerRefusedIn.set(node, node.bootId);
      this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'etcd-learner-refused', detail: learner.hostname });
    }
    return true;
  }

  /**
   * `buildInitialCluster` succeeded: `addMember` removed the old member of the same name and added
   * this one as a learner with a new id; Talos promotes it once it caught up.
   */
  #joinAsLearner(cluster: SimCluster, node: SimNode, realId?: string): void {
    const incarnation = this.#recorder.events.filter(
      (e) => e.cluster === cluster.name && e.node === node.address && e.kind === 'etcd-learner-added',
    ).length;
    node.etcdMemberId = realId ?? memberIdFor(cluster.name, node.hostname, incarnation + 1);
    node.etcdMember = true;
    node.etcdLearner = true;
    node.etcdWaitingJoin = false;
    node.etcdDataEmpty = false;
    node.etcdServiceSince = Date.now();
    this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'etcd-learner-added', detail: node.etcdMemberId });
    this.#spawn(() => this.#promoteLearner(cluster, node, node.bootId));
  }

  /** EtcdRecover (v1alpha1_server.go v1.13.9): stores the upload as `/var/lib/etcd.snapshot`. */
  uploadRecoverySnapshot(cluster: SimCluster, node: SimNode, bytes: Buffer, source: string): string | undefined {
    // `/var/lib` lives on EPHEMERAL, mounted once the node booted far enough to serve the API.
    if (!apidReachable(cluster, node) || node.servicesStopped) {
      return 'rpc error: code = FailedPrecondition desc = etcd service is not ready for recovery yet';
    }
    if (node.role !== 'controlplane') return 'rpc error: code = Unimplemented desc = etcd recover is only available on control plane nodes';
    node.recoverySnapshot = Buffer.from(bytes);
    this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'etcd-snapshot-uploaded', detail: source });
    return undefined;
  }

  /**
   * The Bootstrap API (v1alpha1_server.go v1.13.9): CRI must be up (`IsBootstrapAllowed`), the node a
   * control plane, `/var/lib/etcd` empty; then `BootstrapEtcd` (services/etcd.go) replaces the
   * joining etcd with one that bootstraps a new cluster, recovering from the uploaded snapshot first
   * when asked. The answer comes before etcd has run: a failed recovery shows only in the service.
   * Every call is recorded (`etcd-bootstrap`), refused or not.
   */
  requestBootstrap(
    cluster: SimCluster,
    node: SimNode,
    request: { recover: boolean; skipHashCheck: boolean; source: string },
  ): string | undefined {
    const detail = request.recover ? `recover-from ${request.source}` : 'plain';
    const refuse = (error: string): string => {
      this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'etcd-bootstrap', detail, error });
      return error;
    };
    const criUp = !node.servicesStopped && !(node.stage === 'booting' && Date.now() - node.bootedAt < this.#timing.bootMs / 2);
    if (!criUp) return refuse('rpc error: code = FailedPrecondition desc = bootstrap is not available yet');
    if (node.role !== 'controlplane')
      return refuse('rpc error: code = Unimplemented desc = bootstrap is only available on control plane nodes');
    if (!node.etcdDataEmpty) return refuse('rpc error: code = AlreadyExists desc = etcd data directory is not empty');
    this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'etcd-bootstrap', detail });
    const others = etcdMembers(cluster).filter((m) => m !== node && etcdMemberHealthy(cluster, m));
    if (others.length > 0) {
      this.#recorder.event({
        cluster: cluster.name,
        node: node.address,
        kind: 'etcd-split-brain',
        detail: others.map((m) => m.hostname).join(','),
      });
    }
    node.etcdWaitingJoin = false;
    delete node.etcdFailed;
    node.etcdServiceSince = Date.now();
    node.etcdRestoring = true;
    this.#spawn(async () => {
      try {
        await this.#runBootstrap(cluster, node, request, others.length > 0);
      } finally {
        delete node.etcdRestoring;
      }
    });
    return undefined;
  }

  /** The bootstrap etcd's PreFunc: restore (Status, then the restore's hash check), then start as a one-member cluster. */
  async #runBootstrap(
    cluster: SimCluster,
    node: SimNode,
    request: { recover: boolean; skipHashCheck: boolean },
    split: boolean,
  ): Promise<void> {
    const bootId = node.bootId;
    await this.sleep(this.#timing.stepMs);
    if (node.bootId !== bootId) return;
    const fail = (message: string, dataWritten: boolean): void => {
      // system.go capitalises the first letter of the run error; PreFunc's is wrapped "failed to run pre stage".
      node.etcdFailed = `Failed to run pre stage: ${message}`;
      if (dataWritten) node.etcdDataEmpty = false;
      this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'etcd-restore-failed', detail: message });
    };
    const real = realEtcdOf(cluster);
    let realId: string | undefined;
    if (real) {
      // etcd restores (its sha256 check deciding) and starts the new cluster of one; nothing is modelled.
      if (request.recover && !node.recoverySnapshot) {
        fail(`error verifying snapshot: stat ${RECOVERY_SNAPSHOT}: no such file or directory`, false);
        return;
      }
      const started = await realEtcdBootstrap(cluster, node, request.recover ? node.recoverySnapshot : undefined, request.skipHashCheck);
      if (started && 'error' in started) {
        fail(`error recovering from the snapshot: ${started.error}`, true);
        return;
      }
      realId = started?.id;
      delete node.recoverySnapshot;
    }
    let content: { revision: number; totalKeys: number } | undefined;
    if (request.recover && !real) {
      const snapshot = node.recoverySnapshot;
      if (!snapshot) {
        fail(`error verifying snapshot: stat ${RECOVERY_SNAPSHOT}: no such file or directory`, false);
        return;
      }
      const status = statusOfBytes(snapshot, RECOVERY_SNAPSHOT);
      if ('crash' in status || 'error' in status) {
        // machined survives a fault in the etcdutl library no better than talosctl; the client checked first.
        fail(`error verifying snapshot: ${'error' in status ? status.error : 'unexpected fault address'}`, false);
        return;
      }
      // Restore creates member/snap/db before it checks the hash, so a failed check leaves the data directory non-empty.
      const hashError = restoreHashCheck(snapshot, request.skipHashCheck);
      if (hashError) {
        fail(`error recovering from the snapshot: ${hashError}`, true);
        return;
      }
      delete node.recoverySnapshot;
      content = status;
    }
    await this.sleep(this.#timing.stepMs);
    if (node.bootId !== bootId) return;
    const now = Date.now();
    const incarnation = this.#recorder.events.filter(
      (e) => e.cluster === cluster.name && e.node === node.address && (e.kind === 'etcd-learner-added' || e.kind === 'etcd-restored'),
    ).length;
    node.etcdMemberId = realId ?? memberIdFor(cluster.name, node.hostname, incarnation + 1);
    node.etcdMember = true;
    node.etcdLearner = false;
    node.etcdDataEmpty = false;
    if (!split) {
      // A new cluster of one: the other members' entries belong to the old one.
      for (const other of controlPlanesOf(cluster)) {
        if (other !== node) {
          other.etcdMember = false;
          other.etcdLearner = false;
        }
      }
      cluster.etcd.leaderId = node.etcdMemberId;
      cluster.etcd.raftTerm = 2;
      cluster.etcd.raftIndexBase = 3 - Math.floor((now - cluster.createdAt) / 2000);
    }
    if (real && request.recover) {
      this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'etcd-restored', detail: 'restored by etcd' });
    }
    if (content) {
      // The store is the snapshot's: revisions continue from its revision, its keys are the keys.
      cluster.etcd.revisionBase = content.revision - Math.floor((now - cluster.createdAt) / 5000);
      cluster.etcd.totalKeys = content.totalKeys;
      this.#recorder.event({
        cluster: cluster.name,
        node: node.address,
        kind: 'etcd-restored',
        detail: `revision ${content.revision}, total keys ${content.totalKeys}`,
      });
    }
    // Once the API serves again, the controllers reconcile everything anew (Flux restamps its conditions),
    // whichever node brought it back.
    this.#spawn(async () => {
      while (kubeApiAvailability(cluster) !== 'up') await this.sleep(this.#timing.stepMs);
      cluster.kube.controllersRestartedAt = Date.now();
      cluster.kube.fluxReconciledAt = Date.now() + this.#timing.fluxReconcileMs;
    });
  }

  /**
   * A VM Terraform just created (or recreated): it boots the ISO into maintenance mode and waits
   * for its machine configuration, outside etcd, discovery and Kubernetes.
   */
  freshMachine(cluster: SimCluster, node: SimNode, options: { replacesIncarnation: boolean } = { replacesIncarnation: true }): void {
    // The old machine's etcd member stays listed (and counted) until someone removes it or the new
    // machine joins: Terraform knows nothing about etcd (reference/node-replacement.md). A machine
    // Terraform creates for the first time had no earlier incarnation, so it leaves no member behind.
    if (options.replacesIncarnation && node.role === 'controlplane' && node.etcdMember && !node.staleMember) {
      const { staleMember: _none, ...old } = node;
      node.staleMember = { ...structuredClone(old), stage: 'off', servicesStopped: true, events: [], vmDestroyed: true };
    }
    node.stage = 'maintenance';
    delete node.failed;
    delete node.failedAt;
    delete node.etcdRemoved;
    node.bootId = randomUUID();
    node.bootedAt = Date.now();
    node.events = [];
    node.etcdMember = false;
    node.etcdLearner = false;
    node.discoveryMember = false;
    node.k8sRegistered = false;
    node.servicesStopped = false;
    node.cordoned = false;
    node.cordonedByTalos = false;
    delete node.fallbackVersion;
    delete node.fallbackSchematic;
    delete node.vmDestroyed;
    removePodsOf(cluster, node);
  }

  /**
   * The machine configuration reached a machine in maintenance mode: it installs, boots and joins
   * without `talosctl bootstrap`. A control plane joins etcd as a learner and Talos promotes it
   * once it caught up (reference/tofu-facts.md, Talos etcd learners); the kubelet registers the Node
   * NotReady, then Ready.
   */
  joinNode(cluster: SimCluster, node: SimNode): void {
    if (node.stage !== 'maintenance') return;
    this.#stage(cluster, node, 'booting');
    const bootId = randomUUID();
    node.bootId = bootId;
    node.bootedAt = Date.now();
    node.discoveryMember = true;
    node.kubeletNotReady = named(cluster.faults.newNodeNeverReady, node);
    this.#spawn(async () => {
      const boot = (kind: MachineEvent['kind'], text: string, extra: Partial<MachineEvent> = {}): void =>
        this.publish(node, { actorId: '', kind, text, ...extra });
      boot('status', `stage: BOOTING ready: false unmetCond: [name:"nodeReady" reason:"node \\"${node.hostname}\\" is not ready"]`, {
        stage: 'BOOTING',
        ready: false,
      });
      await this.sleep(this.#timing.bootMs / 2);
      if (node.role === 'controlplane') {
        // services/etcd.go addMember (siderolabs/talos v1.13.9): the member list needs a leader
        // (WithRequireLeader), so without quorum the new machine keeps retrying and never joins.
        while (!hasQuorum(cluster) || cluster.faults.etcdNoLeader || this.#learnerRefused(cluster, node))
          await this.sleep(this.#timing.stepMs);
        if (node.bootId !== bootId) return;
        // A member with the machine's own name is removed before the new one is added as a learner.
        const realId = await realEtcdJoin(
          cluster,
          node,
          () => this.sleep(REAL_ETCD_RETRY_MS),
          () => node.bootId !== bootId,
        );
        if (node.bootId !== bootId) return;
        const stale = node.staleMember;
        if (stale) {
          delete node.staleMember;
          this.#recorder.event({
            cluster: cluster.name,
            node: node.address,
            kind: 'etcd-member-superseded',
            detail: stale.etcdMemberId ?? '',
          });
        }
        // Each incarnation of a machine is a new etcd member with an id of its own.
        const incarnation = this.#recorder.events.filter(
          (e) => e.cluster === cluster.name && e.node === node.address && e.kind === 'etcd-learner-added',
        ).length;
        node.etcdMemberId = realId ?? memberIdFor(cluster.name, node.hostname, incarnation + 1);
        node.etcdMember = true;
        node.etcdLearner = true;
        this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'etcd-learner-added', detail: node.etcdMemberId });
        boot('service', 'service: etcd message: Health check successful healthy: true');
        this.#spawn(() => this.#promoteLearner(cluster, node, node.bootId));
      }
      if (node.bootId !== bootId) return;
      node.k8sRegistered = true;
      cluster.kube.pods.push(...nodePods(cluster.shape, node, Date.now()));
      boot('service', 'service: kubelet message: Health check successful healthy: true');
      await this.sleep(this.#timing.bootMs / 2);
      if (node.bootId !== bootId) return;
      node.lastUpAt = Date.now();
      this.#stage(cluster, node, 'running');
      longhornOnSchedulable(cluster, node, this.#recorder);
      schedulePending(cluster, Date.now());
      this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'up', toVersion: node.talosVersion });
      boot('status', `stage: RUNNING ready: ${!node.kubeletNotReady} unmetCond: []`, { stage: 'RUNNING', ready: !node.kubeletNotReady });
    });
  }

  /** Talos keeps trying to promote the learner; a stuck one (the fault) is promoted once the fault clears. */
  async #promoteLearner(cluster: SimCluster, node: SimNode, bootId: string): Promise<void> {
    await this.sleep(this.#timing.learnerPromoteMs);
    // services/etcd.go promoteMember (v1.13.9) retries MemberPromote, which needs a leader.
    while (named(cluster.faults.etcdLearnerStuck, node) || cluster.faults.etcdNoLeader || !hasQuorum(cluster))
      await this.sleep(this.#timing.stepMs);
    if (node.bootId !== bootId || !node.etcdMember || !node.etcdLearner) return;
    const promoted = await realEtcdPromote(
      cluster,
      node.etcdMemberId ?? '',
      () => this.sleep(REAL_ETCD_RETRY_MS),
      () => node.bootId !== bootId,
    );
    if (promoted === false || node.bootId !== bootId || !node.etcdLearner) return;
    node.etcdLearner = false;
    this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'etcd-learner-promoted', detail: node.etcdMemberId ?? '' });
  }

  /**
   * Terraform destroyed the VM. A node that was reset and deleted first leaves no trace; otherwise
   * its Node object goes Unknown and its etcd member stays, as in reality.
   */
  destroyVm(cluster: SimCluster, node: SimNode): void {
    node.vmDestroyed = true;
    node.servicesStopped = true;
    void realEtcdKilled(cluster, node);
    this.#stage(cluster, node, 'off');
    if (!node.k8sRegistered && !node.etcdMember) {
      cluster.nodes.splice(cluster.nodes.indexOf(node), 1);
      removePodsOf(cluster, node);
    }
  }

  /**
   * The machine crashes or loses power: no sequence runs, nothing leaves etcd or Kubernetes. apid is
   * gone (dials get `no route to host`), the Node goes Unknown and keeps its pods, the etcd member
   * stays listed and unreachable, Longhorn's replicas there fail. Only this incarnation: a VM
   * Terraform recreates boots as a new machine (`freshMachine`).
   */
  failMachine(cluster: SimCluster, node: SimNode): void {
    node.failed = true;
    node.failedAt = Date.now();
    node.servicesStopped = true;
    void realEtcdKilled(cluster, node);
    // A sequence in flight dies with the machine; its bootId no longer matches when it wakes.
    node.bootId = randomUUID();
    this.#stage(cluster, node, 'off');
    this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'machine-failed', detail: node.hostname });
  }

  /**
   * Power comes back to a failed machine: it boots from its disk as the same machine (same etcd
   * data, same member if nobody removed it; a removed member's etcd keeps failing). The kubelet
   * posts status again, or registers the Node again if it was deleted.
   */
  restoreMachine(cluster: SimCluster, node: SimNode): void {
    if (!node.failed) return;
    delete node.failed;
    delete node.failedAt;
    void realEtcdRestarted(cluster, node);
    this.#spawn(() => this.#reboot(cluster, node, { version: node.talosVersion, schematic: node.schematic, platformOk: true }));
  }

  /**
   * EtcdRemoveMemberByID (v1alpha1_server.go, siderolabs/talos v1.13.9) through etcd's MemberRemove
   * (etcd-io/etcd v3.6.5 server/etcdserver/server.go `mayRemoveMember`, strict reconfiguration
   * check on): the member leaves the list. Returns the gRPC error text talosctl prints, or undefined.
   */
  removeEtcdMember(cluster: SimCluster, id: bigint): string | undefined {
    const decimal = id.toString(10);
    const failed = (cause: string): string =>
      `rpc error: code = Unknown desc = failed to remove member: failed to remove member ${decimal}: ${cause}`;
    // clientv3.WithRequireLeader: no leader, no member API.
    if (cluster.faults.etcdNoLeader || !hasQuorum(cluster)) return failed('etcdserver: no leader');
    const members = etcdMembers(cluster);
    const member = members.find((m) => m.etcdMemberId !== undefined && BigInt(`0x${m.etcdMemberId}`) === id);
    if (!member) return `rpc error: code = NotFound desc = failed to remove member ${decimal}: etcdserver: member not found`;
    if (!member.etcdLearner) {
      const voters = etcdVoters(cluster);
      // IsReadyToRemoveVotingMember: every member here once started, so only a lone member fails it.
      const others = voters.filter((m) => m !== member).length;
      if (others < Math.floor(others / 2) + 1) return failed('etcdserver: re-configuration failed due to not enough started members');
      // A member the leader has no connection to is safe to remove; otherwise the active members
      // without it must still be a quorum of the current voters.
      if (etcdMemberHealthy(cluster, member)) {
        const active = voters.filter((m) => etcdMemberHealthy(cluster, m)).length;
        if (active - 1 < 1 + Math.floor((voters.length - 1) / 2)) return failed('etcdserver: unhealthy cluster');
      }
    }
    this.#memberRemoved(cluster, member);
    return undefined;
  }

  /** A member real etcd removed (`etcd remove-member` through it): the machine that held it learns it. */
  etcdMemberRemoved(cluster: SimCluster, id: string): void {
    const member = etcdMembers(cluster).find((m) => m.etcdMemberId === id);
    if (member) this.#memberRemoved(cluster, member);
  }

  #memberRemoved(cluster: SimCluster, member: SimNode): void {
    const owner = cluster.nodes.find((n) => n === member || n.staleMember === member);
    if (owner?.staleMember === member) delete owner.staleMember;
    else {
      // The removed member's etcd stops (the member was permanently removed); Talos does not re-add it.
      member.etcdMember = false;
      member.etcdLearner = false;
      member.etcdRemoved = true;
    }
    this.#recorder.event({ cluster: cluster.name, node: member.address, kind: 'etcd-member-removed', detail: member.etcdMemberId ?? '' });
  }

  /** `kubectl delete node`: pods are garbage-collected; a running kubelet registers the Node again. */
  deleteKubeNode(cluster: SimCluster, node: SimNode): void {
    node.k8sRegistered = false;
    removePodsOf(cluster, node);
    schedulePending(cluster, Date.now());
    this.#recorder.event({ cluster: cluster.name, node: node.address, kind: 'node-deleted' });
    if (!apidReachable(cluster, node) || node.servicesStopped) return;
    this.#spawn(async () => {
      await this.sleep(this.#timing.reregisterMs);
      if (!node.servicesStopped && (node.stage === 'running' || node.stage === 'booting')) node.k8sRegistered = true;
    });
  }
}
