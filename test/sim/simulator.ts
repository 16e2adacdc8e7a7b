/**
 * The simulated Talos estate: one in-memory state served to the fake `talosctl`/`tofu`
 * executables, one Kubernetes API per cluster and an Image Factory, all on 127.0.0.1.
 */
import { SIM_STATE_URL } from './tofu.ts';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join, resolve } from 'node:path';
import { buildCluster, findNode } from './cluster-model.ts';
import { startControlServer } from './control-server.ts';
import { createCredentials } from './credentials.ts';
import { FaultController } from './faults.ts';
import { defaultFactoryVersions, startImageFactory } from './image-factory.ts';
import { startKubeApi } from './kube-api.ts';
import { Lifecycle } from './lifecycle.ts';
import { attachRealEtcd, realEtcdOf } from './etcd-real/attach.ts';
import type { RealEtcdCluster } from './etcd-real/etcd-cluster.ts';
import { Recorder } from './recorder.ts';
import { schematicId } from './schematics.ts';
import { SimTerraform } from './terraform.ts';
import { productionShape, stagingShape } from './shapes.ts';
import { talosctlScript, writeWrappers, type WrapperPaths } from './wrappers.ts';
import type { CallRecord, ClusterShape, SelfEndpointHang, SimCluster, SimEvent, SimNode, SimState, SimTiming } from './types.ts';

export interface SimulatorOptions {
  /** Working directory for wrappers (`bin/`), Terraform dirs (`terraform/<cluster>`) and snapshots. Created if missing. */
  dir: string;
  /** Secret embedded in every credential the clusters hand out. Default: a random `CANARY-…` string. */
  canary?: string;
  /**
   * Secret embedded only in the sensitive values of the Terraform state (`talos_machine_secrets`),
   * which `tofu show -json` prints in plain text and `tofu output` never gives. Default: a random
   * `SECRETS-CANARY-…` string.
   */
  secretsCanary?: string;
  /** Cluster shapes. Default: `[stagingShape(), productionShape()]`. */
  clusters?: ClusterShape[];
  /** Timing knobs in milliseconds; see {@link SimTiming} for defaults. */
  timing?: Partial<SimTiming>;
  /** Talos versions the Image Factory lists. Default: 1.9.0 … 1.13.9 with a few pre-releases. */
  factoryVersions?: string[];
  /** See {@link SelfEndpointHang}. Default `multi-control-plane`; changeable later through `state.behavior`. */
  selfEndpointHang?: SelfEndpointHang;
  /**
   * `real`: each control plane's etcd member is a real etcd process (etcd-real/), for the procedures
   * that change membership or data. Default `model`: the in-memory model, for the fast tests.
   */
  etcd?: 'model' | 'real';
}

export interface SimulatorEnv {
  TALOSCTL_BIN: string;
  TOFU_BIN: string;
  IMAGE_FACTORY_URL: string;
}

export function defaultTiming(overrides: Partial<SimTiming> = {}): SimTiming {
  const stepMs = overrides.stepMs ?? 10;
  const rebootMs = overrides.rebootMs ?? 200;
  return {
    stepMs,
    rebootMs,
    bootMs: overrides.bootMs ?? stepMs * 3,
    longhornRebuildMs: overrides.longhornRebuildMs ?? 300,
    retryMs: overrides.retryMs ?? 50,
    healthRetryMs: overrides.healthRetryMs ?? 25,
    reregisterMs: overrides.reregisterMs ?? rebootMs,
    learnerPromoteMs: overrides.learnerPromoteMs ?? stepMs * 4,
    fluxReconcileMs: overrides.fluxReconcileMs ?? Math.max(1000, stepMs * 4),
    etcdJoinTimeoutMs: overrides.etcdJoinTimeoutMs ?? Math.max(60_000, stepMs * 600),
    ...(overrides.tofuStillLines === undefined ? {} : { tofuStillLines: overrides.tofuStillLines }),
  };
}

export class Simulator {
  readonly dir: string;
  readonly canary: string;
  /** See {@link SimulatorOptions.secretsCanary}. */
  readonly secretsCanary: string;
  readonly state: SimState;
  readonly timing: SimTiming;
  readonly faults: FaultController;
  readonly controlUrl: string;
  readonly imageFactoryUrl: string;
  readonly bin: WrapperPaths;
  /** The Terraform repository (`<dir>/terraform`, a git repository) and each cluster's state. */
  readonly terraform: SimTerraform;
  readonly #recorder: Recorder;
  readonly #lifecycle: Lifecycle;
  readonly #servers: Server[];
  readonly #closeLine: () => Promise<void>;

  constructor(init: {
    dir: string;
    canary: string;
    secretsCanary: string;
    state: SimState;
    timing: SimTiming;
    recorder: Recorder;
    lifecycle: Lifecycle;
    servers: Server[];
    closeLine: () => Promise<void>;
    controlUrl: string;
    imageFactoryUrl: string;
    bin: WrapperPaths;
    terraform: SimTerraform;
  }) {
    this.dir = init.dir;
    this.canary = init.canary;
    this.secretsCanary = init.secretsCanary;
    this.state = init.state;
    this.timing = init.timing;
    this.faults = new FaultController(init.state);
    this.controlUrl = init.controlUrl;
    this.imageFactoryUrl = init.imageFactoryUrl;
    this.bin = init.bin;
    this.terraform = init.terraform;
    this.#recorder = init.recorder;
    this.#lifecycle = init.lifecycle;
    this.#servers = init.servers;
    this.#closeLine = init.closeLine;
  }

  /** Every talosctl/tofu invocation, in start order. */
  get calls(): CallRecord[] {
    return this.#recorder.calls;
  }

  /** Node-level lifecycle events, in order. */
  get events(): SimEvent[] {
    return this.#recorder.events;
  }

  /**
   * Environment for the bot: `TALOSCTL_BIN` names the directory of versioned clients by default
   * (`{ talosctl: 'binary' }` gives the single v1.11.6 `bin/talosctl`).
   */
  env(options: { talosctl?: 'versions-dir' | 'binary' } = {}): SimulatorEnv {
    return {
      TALOSCTL_BIN: options.talosctl === 'binary' ? this.bin.talosctl : this.bin.talosctlVersions,
      TOFU_BIN: this.bin.tofu,
      IMAGE_FACTORY_URL: this.imageFactoryUrl,
    };
  }

  /**
   * The simulated talosctl of `version` as its release publishes it (`talosctl-linux-<arch>`): a
   * working client of that version, for a test's release server to serve.
   */
  talosctlRelease(version: string): string {
    return talosctlScript(this.bin.port, version);
  }

  cluster(name: string): SimCluster {
    const cluster = this.state.clusters[name];
    if (!cluster) throw new Error(`unknown simulated cluster ${JSON.stringify(name)}`);
    return cluster;
  }

  /** A node by address or hostname. */
  node(cluster: string, ref: string): SimNode {
    const node = findNode(this.cluster(cluster), ref);
    if (!node) throw new Error(`cluster ${cluster} has no node ${JSON.stringify(ref)}`);
    return node;
  }

  kubeApiUrl(cluster: string): string {
    return `http://127.0.0.1:${this.cluster(cluster).kubeApiPort}`;
  }

  talosconfig(cluster: string): string {
    return this.cluster(cluster).credentials.talosconfig;
  }

  kubeconfig(cluster: string): string {
    return this.cluster(cluster).credentials.kubeconfig;
  }

  /**
   * The machine (by address or hostname) crashes or loses power, as a dead machine looks to every
   * client: talosctl cannot dial it, its Node goes Ready=Unknown with its pods still bound, its etcd
   * member stays listed and unreachable, its Longhorn replicas fail. It stays so until Terraform
   * recreates its VM (`vm-replaced`): the new machine answers normally (reference/node-replacement.md).
   */
  failMachine(cluster: string, node: string): void {
    this.#lifecycle.failMachine(this.cluster(cluster), this.node(cluster, node));
  }

  /**
   * On real etcd, resolves once the members that still run agree on a running leader: after a
   * `failMachine` of the leader, the others hold an election first (about one election timeout),
   * and until it ends etcd answers "no leader", as a real cluster would. The model has no election.
   */
  async etcdSettled(cluster: string): Promise<void> {
    await realEtcdOf(this.cluster(cluster))?.settled();
  }

  /** Power comes back to a machine `failMachine` took down: it boots from its own disk (events `reboot`, `up`). */
  restoreMachine(cluster: string, node: string): void {
    this.#lifecycle.restoreMachine(this.cluster(cluster), this.node(cluster, node));
  }

  /** Upgrades the node accepted so far (by address or hostname). */
  /** The version of an image an upgrade installed on the node that it has not booted yet (a ≥ 1.13 drain that timed out). */
  installedNotBooted(cluster: string, node: string): string | undefined {
    return this.#lifecycle.installedNotBooted(this.node(cluster, node))?.version;
  }

  upgradeCount(cluster: string, node: string): number {
    return this.#recorder.upgradeCount(cluster, this.node(cluster, node).address);
  }

  /**
   * Bootstrap API calls that reached the cluster's nodes (reference/etcd-recovery.md), refused ones
   * included unless `accepted`; `node` (address or hostname) narrows it to one node.
   */
  bootstrapCount(cluster: string, options: { node?: string; accepted?: boolean } = {}): number {
    const node = options.node === undefined ? undefined : this.node(cluster, options.node).address;
    return this.#recorder.bootstrapCount(cluster, { ...(node ? { node } : {}), ...(options.accepted ? { accepted: true } : {}) });
  }

  /** Most control planes out of service at the same moment since start. */
  maxControlPlanesDownAtOnce(cluster: string): number {
    return this.#recorder.maxControlPlanesDownAtOnce(cluster);
  }

  /**
   * Holds every upgrade reboot of `cluster` (of `node` only, by address or hostname, when given) down,
   * the node rebooting and unreachable, from now until the returned function is called, which brings
   * the held nodes up and stops holding.
   */
  holdReboots(cluster: string, node?: string): () => void {
    let bringUp = (): void => undefined;
    const up = new Promise<void>((resolve) => (bringUp = resolve));
    this.faults.set(cluster, {
      holdReboot: (rebooting) => (node === undefined || rebooting.address === node || rebooting.hostname === node ? up : undefined),
    });
    return () => {
      this.faults.clear(cluster, 'holdReboot');
      bringUp();
    };
  }

  /**
   * Holds the talosctl calls of `cluster` that `matches` picks (by the call and its command path,
   * `upgrade`, `etcd status`) unanswered until `release` is called; `reached` resolves when the first
   * one arrives. For a test that must act between the bot's request and its answer.
   */
  holdCalls(
    cluster: string,
    matches: (call: Readonly<CallRecord>, command: string) => boolean,
  ): { reached: Promise<void>; release: () => void } {
    let arrived = (): void => undefined;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.faults.set(cluster, {
      holdCall: (call, command) => {
        if (!matches(call, command)) return undefined;
        arrived();
        return released;
      },
    });
    return { reached, release };
  }

  /** Polls until `predicate` holds; for tests waiting on background sequences. */
  async waitFor(predicate: () => boolean, timeoutMs = 5000, description = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async close(): Promise<void> {
    this.#lifecycle.close();
    await this.#closeLine();
    await Promise.all(
      this.#servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
          }),
      ),
    );
  }
}

export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  const dir = resolve(options.dir);
  const canary = options.canary ?? `CANARY-${randomBytes(9).toString('hex')}`;
  const secretsCanary = options.secretsCanary ?? `SECRETS-CANARY-${randomBytes(9).toString('hex')}`;
  const shapes = options.clusters ?? [stagingShape(), productionShape()];
  const timing = defaultTiming(options.timing);
  const state: SimState = {
    clusters: {},
    schematics: {},
    factoryVersions: options.factoryVersions ?? defaultFactoryVersions(),
    behavior: { selfEndpointHang: options.selfEndpointHang ?? 'multi-control-plane' },
  };
  const recorder = new Recorder();
  const lifecycle = new Lifecycle(state, timing, recorder);
  const deps = { state, timing, lifecycle, recorder };
  const servers: Server[] = [];
  const realEtcdStarts: Promise<RealEtcdCluster>[] = [];
  await mkdir(join(dir, 'bin'), { recursive: true });
  state.schematics[schematicId([])] = [];
  for (const shape of shapes) {
    if (state.clusters[shape.name]) throw new Error(`duplicate cluster shape ${JSON.stringify(shape.name)}`);
    const kube = await startKubeApi(deps, shape.name);
    servers.push(kube.server);
    const terraformDir = join(dir, 'terraform', shape.name);
    const snapshotDir = join(dir, 'snapshots', shape.name);
    await mkdir(terraformDir, { recursive: true });
    await mkdir(snapshotDir, { recursive: true });
    await writeFile(join(terraformDir, 'main.tf'), rootModule(shape.name));
    const credentials = createCredentials({
      cluster: shape.name,
      canary,
      secretsCanary,
      endpoints: shape.endpoints,
      nodes: shape.nodes.map((n) => n.address),
      kubeApiUrl: `http://127.0.0.1:${kube.port}`,
    });
    const cluster = buildCluster({ shape, terraformDir, snapshotDir, kubeApiPort: kube.port, credentials, now: Date.now() });
    state.clusters[shape.name] = cluster;
    if (options.etcd === 'real') realEtcdStarts.push(attachRealEtcd(cluster, join(dir, 'etcd', shape.name)));
    state.schematics[schematicId(shape.defaultExtensions)] = [...shape.defaultExtensions].sort();
    if (shape.longhornExtensions) state.schematics[schematicId(shape.longhornExtensions)] = [...shape.longhornExtensions].sort();
    recorder.noteControlPlanes(cluster);
  }
  // The clusters' etcd processes start together: each waits out etcd's HealthInterval once.
  const started = await Promise.allSettled(realEtcdStarts);
  const realEtcds = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failedStart = started.find((r) => r.status === 'rejected');
  if (failedStart) {
    await Promise.all(realEtcds.map((e) => e.close()));
    throw failedStart.reason;
  }
  const terraform = new SimTerraform(join(dir, 'terraform'), state);
  await terraform.init();
  const control = await startControlServer(deps);
  servers.push(control.server);
  const factory = await startImageFactory(state);
  servers.push(factory.server);
  const bin = await writeWrappers(join(dir, 'bin'), control.linePort);
  return new Simulator({
    dir,
    canary,
    secretsCanary,
    state,
    timing,
    recorder,
    lifecycle,
    servers,
    closeLine: async () => {
      await control.closeLine();
      await Promise.all(realEtcds.map((e) => e.close()));
    },
    controlUrl: control.url,
    imageFactoryUrl: factory.url,
    bin,
    terraform,
  });
}

/**
 * A cluster root's `main.tf`: its state lives behind a backend the root module names, as the
 * estate's does, so any checkout of the repository at this root reads the same state (see `stateOf` in tofu.ts).
 */
function rootModule(cluster: string): string {
  return `# Terraform root of the simulated ${cluster} cluster.\nterraform {\n  backend "http" {\n    address = "${SIM_STATE_URL}/${cluster}"\n  }\n}\n`;
}
