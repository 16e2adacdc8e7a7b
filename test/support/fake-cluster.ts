/**
 * One Talos cluster for tests of the playbooks, in-process. The simulator's model of the cluster
 * answers every talosctl and tofu call through a fake process runner, so the bot's own Talosctl
 * and Tofu adapters compose the command lines and talosctl's real output formats come back; a
 * fake Kubernetes API renders the same model as the simulated API server does. No child process
 * starts and nothing listens on a port.
 */
import { renderPrometheusRules, renderServiceMonitors } from '../sim/monitoring.ts';
import { basename } from 'node:path';
import type { V1DaemonSet, V1Deployment, V1Namespace, V1Node, V1Pod, V1PodDisruptionBudget, V1StatefulSet } from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import type { ClusterAccess, ClusterSession } from '../../src/cluster/cluster-session.ts';
import { terraformOutputs } from '../../src/cluster/terraform-outputs.ts';
import { createTofu, type Tofu } from '../../src/cluster/tofu.ts';
import { parseInventory, type ClusterConfig, type Inventory } from '../../src/config/inventory.ts';
import type { Estate } from '../../src/cluster/estate.ts';
import { ExecError, type ProcessRunner, type RunResult } from '../../src/exec/process-runner.ts';
import type { KubeApi } from '../../src/kube/kube-api.ts';
import { SecretScrubber } from '../../src/log/secret-scrubber.ts';
import { createImageFactory, type ImageFactory } from '../../src/talos/image-factory.ts';
import { createTalosctl, type Talosctl } from '../../src/talos/talosctl.ts';
import { buildCluster, findNode, kubeApiAvailability } from '../sim/cluster-model.ts';
import { createCredentials } from '../sim/credentials.ts';
import { ClientGone, type ExecIO } from '../sim/exec-io.ts';
import { defaultFactoryVersions } from '../sim/image-factory.ts';
import { renderRecurringJobs, renderScheduledBackups } from '../sim/backup-schedules.ts';
import {
  renderDaemonSets,
  renderDeployments,
  renderStatefulSets,
  renderNamespace,
  renderNode,
  renderPdb,
  renderPod,
  renderEngine,
  renderReplicas,
  renderCnpgCluster,
  renderLonghornNodes,
  renderSettings,
  renderVolume,
  type Json,
} from '../sim/kube-objects.ts';
import { renderFlux, requestReconcile } from '../sim/flux-objects.ts';
import { Lifecycle } from '../sim/lifecycle.ts';
import { answerEviction } from '../sim/eviction.ts';
import { Recorder } from '../sim/recorder.ts';
import { schematicId } from '../sim/schematics.ts';
import { defaultTiming } from '../sim/simulator.ts';
import { talosconfigPath } from '../sim/talosconfig-file.ts';
import { runTalosctl } from '../sim/talosctl/index.ts';
import { runTofu } from '../sim/tofu.ts';
import type { CallRecord, ClusterShape, SimCluster, SimEvent, SimNode, SimState, SimTiming } from '../sim/types.ts';
import { CLIENT_VERSIONS, DEFAULT_CLIENT_VERSION } from '../sim/versions.ts';

/** Where the session's talosconfig would be: every talosctl argv carries it. */
export const TALOSCONFIG = '/run/talos-chatops/session/talosconfig';

const TALOSCTL_DIR = '/opt/talosctl';

export interface FakeClusterOptions {
  shape: ClusterShape;
  /** The cluster's Terraform directory, as the inventory names it: tofu answers only there. */
  terraformDir: string;
  /** Simulator timing in ms; short by default, so a reboot takes about a tenth of a second. */
  timing?: Partial<SimTiming>;
  /**
   * The version of the one talosctl binary `TALOSCTL_BIN` names, e.g. `v1.11.6`: every session gets
   * it whatever the cluster runs. Default: a directory of versioned binaries, the matching one picked.
   */
  talosctlBinary?: string;
}

export interface FakeCluster {
  /** The cluster's model: a test changes what a node runs, or sets the cluster's faults. */
  model: SimCluster;
  node(ref: string): SimNode;
  /** The state a Talos upgrade leaves on a node: it runs `running`, and `fallback` is its other boot entry. */
  runsWithFallback(ref: string, running: string, fallback: string): void;
  access: ClusterAccess;
  tofu: Tofu;
  factory: ImageFactory;
  /** Every talosctl and tofu invocation, in start order. */
  readonly calls: readonly CallRecord[];
  /** What happened to nodes: upgrades, reboots, rollbacks, resets, deleted Nodes. */
  readonly events: readonly SimEvent[];
  /** The argv of every talosctl call of `command` (`rollback`, `etcd status`), as the binary received it. */
  talosctlCalls(command: string): string[][];
  /** Stops the machine sequences still running (a reboot the test did not wait for). */
  close(): void;
  /** Makes a schematic of these official extensions known to the Image Factory, as a Terraform apply would; returns its ID. */
  declareSchematic(extensions: string[]): string;
}

/** The inventory of the cluster `shape` describes, with the operators and approvers of the engine fixture. */
/** An estate whose sources agree with the inventory: what a double that does not model the sources answers. */
export function agreeingEstate(cluster: ClusterConfig): Estate {
  const unmodelled = { ok: false, error: 'not modelled by this double' } as const;
  return {
    observation: { talosconfig: { ok: true, value: cluster.controlPlanes }, etcd: unmodelled, kube: unmodelled, terraform: unmodelled },
    controlPlanes: cluster.controlPlanes,
    workers: cluster.workers,
    nodeNames: cluster.nodeNames ?? {},
    disagreements: [],
    unread: [],
  };
}

export function inventoryOf(shape: ClusterShape, dirs: { terraformDir: string; snapshotDir: string }): Inventory {
  const addresses = (role: SimNode['role']): string =>
    shape.nodes
      .filter((n) => n.role === role)
      .map((n) => n.address)
      .join(', ');
  return parseInventory(
    `clusters:
  ${shape.name}:
    environment: ${shape.environment}
    channel: C0MAINTPRD
    terraformDir: ${dirs.terraformDir}
    controlPlanes: [${addresses('controlplane')}]
    workers: [${addresses('worker')}]
    installerPlatform: ${shape.installerPlatform ?? 'nocloud'}
    hostLabel: ${shape.hostLabel ?? 'example.org/proxmox-host'}
    snapshotDir: ${dirs.snapshotDir}
    operators: [U0ALICE, U0BOB]
    approvers: [U0CAROL, U0DAVE]
    maintenanceWindows: always
`,
    'fake-cluster.yaml',
  );
}

/** The talosctl client `forVersion` would pick: the one matching the running Talos, or with `closest` one of its minor. */
function clientFor(running: string | undefined, closest: boolean): string {
  if (running === undefined) return DEFAULT_CLIENT_VERSION;
  const minor = (v: string): string => v.split('.').slice(0, 2).join('.');
  const match =
    CLIENT_VERSIONS.find((v) => v === running) ?? (closest ? CLIENT_VERSIONS.find((v) => minor(v) === minor(running)) : undefined);
  if (match === undefined) throw new Error(`no talosctl ${running} in ${TALOSCTL_DIR}, and the client must match the running Talos`);
  return match;
}

/** One output stream: all of it for the result, and each complete line for the caller, as the real runner's readline gives them. */
function lineStream(onLine: ((line: string) => void) | undefined) {
  let all = '';
  let partial = '';
  return {
    write(text: string): void {
      all += text;
      if (onLine === undefined) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    },
    end(): string {
      if (onLine !== undefined && partial !== '') onLine(partial);
      partial = '';
      return all;
    },
  };
}

const deserialize = <T>(json: Json, type: string): T => ObjectSerializer.deserialize(json, type, '') as T;

export function fakeCluster(options: FakeClusterOptions): FakeCluster {
  const { shape } = options;
  const timing = defaultTiming({ stepMs: 4, rebootMs: 80, ...options.timing });
  const state: SimState = {
    clusters: {},
    schematics: {},
    factoryVersions: defaultFactoryVersions(),
    behavior: { selfEndpointHang: 'multi-control-plane' },
  };
  const recorder = new Recorder();
  const lifecycle = new Lifecycle(state, timing, recorder);
  const credentials = createCredentials({
    cluster: shape.name,
    canary: 'CANARY-fake-cluster-0042',
    endpoints: shape.endpoints,
    nodes: shape.nodes.map((n) => n.address),
    // Nothing connects to it here (the Kubernetes API is in-process), so it is the endpoint Terraform would write.
    kubeApiUrl: shape.kubernetesEndpoint,
  });
  const model = buildCluster({
    shape,
    terraformDir: options.terraformDir,
    snapshotDir: options.terraformDir,
    kubeApiPort: 1,
    credentials,
    now: Date.now(),
  });
  state.clusters[shape.name] = model;
  state.schematics[schematicId([])] = [];
  state.schematics[schematicId(shape.defaultExtensions)] = [...shape.defaultExtensions].sort();
  if (shape.longhornExtensions) state.schematics[schematicId(shape.longhornExtensions)] = [...shape.longhornExtensions].sort();
  const sim = { state, timing, lifecycle, recorder };

  const runner: ProcessRunner = {
    async run(file, args, runOptions) {
      const name = basename(file);
      // The subcommand words only, as the real runner names a failed command.
      const firstFlag = args.findIndex((a) => a.startsWith('-'));
      const what = [name, (firstFlag < 0 ? args : args.slice(0, firstFlag)).slice(0, 2).join(' ')].filter((p) => p !== '').join(' ');
      if (runOptions.signal?.aborted === true) throw new ExecError('exec-cancelled', `${name} was cancelled before it started`);
      const timeout = AbortSignal.timeout(runOptions.timeoutMs);
      const signal = runOptions.signal ? AbortSignal.any([runOptions.signal, timeout]) : timeout;
      const stdout = lineStream(runOptions.onStdoutLine);
      const stderr = lineStream(runOptions.onStderrLine);
      const io: ExecIO = { out: (t) => stdout.write(t), err: (t) => stderr.write(t), signal };
      const talosctl = name.startsWith('talosctl');
      const clientVersion = talosctl ? name.replace(/^talosctl-?/, '') || DEFAULT_CLIENT_VERSION : undefined;
      const cwd = runOptions.cwd ?? '/';
      const call = recorder.startCall(talosctl ? 'talosctl' : 'tofu', args, cwd, clientVersion);
      const started = performance.now();
      let exitCode: number | undefined;
      try {
        if (talosctl) {
          const path = talosconfigPath(args, {
            HOME: '/nonexistent',
            ...(runOptions.env?.['TALOSCONFIG'] ? { TALOSCONFIG: runOptions.env['TALOSCONFIG'] } : {}),
          });
          const talosconfig =
            path === TALOSCONFIG
              ? { path, contents: credentials.talosconfig }
              : { path, error: `failed to open config file ${JSON.stringify(path)}: open ${path}: no such file or directory` };
          exitCode = await runTalosctl(
            { argv: args, cwd, clientVersion: clientVersion ?? DEFAULT_CLIENT_VERSION, talosconfig },
            io,
            sim,
            call,
          );
        } else {
          exitCode = await runTofu({ argv: args, cwd }, io, state, call);
        }
      } catch (error) {
        if (!(error instanceof ClientGone)) throw error;
      }
      call.endedAt = Date.now();
      call.exitCode = exitCode ?? null;
      const result: RunResult = {
        command: [file, ...args],
        stdout: stdout.end(),
        stderr: stderr.end(),
        exitCode: exitCode ?? -1,
        durationMs: performance.now() - started,
      };
      if (exitCode === undefined) {
        // Aborted mid-call: the caller's signal makes it a cancel, the call's own bound a timeout.
        const cancelled = runOptions.signal?.aborted ?? false;
        if (timeout.aborted && !cancelled)
          throw new ExecError('exec-timeout', `${what} timed out after ${Math.round(runOptions.timeoutMs / 1000)}s`, result);
        throw new ExecError('exec-cancelled', `${what} was cancelled`, result);
      }
      if (!(runOptions.okExitCodes ?? [0]).includes(exitCode)) {
        const detail = (result.stderr || result.stdout).trim().split('\n').slice(-3).join('\n');
        throw new ExecError('exec-failed', `${what} exited with ${exitCode}${detail ? `: ${detail}` : ''}`, result);
      }
      return result;
    },
  };

  /** What a client of the Kubernetes endpoint gets when no API server serves. */
  const served = (): void => {
    const availability = kubeApiAvailability(model);
    if (availability === 'down') throw new Error(`connect ECONNREFUSED ${model.kubernetesEndpoint.replace(/^https?:\/\//, '')}`);
    if (availability === 'no-quorum') throw new Error('Internal error occurred: etcdserver: request timed out');
  };
  const customObjects = (apiVersion: string, kind: string, items: Json[]): Json[] => items.map((i) => ({ apiVersion, kind, ...i }));
  const kube: KubeApi = {
    async listNodes() {
      served();
      return model.nodes.filter((n) => n.k8sRegistered).map((n) => deserialize<V1Node>(renderNode(model, n, Date.now()), 'V1Node'));
    },
    async listPods() {
      served();
      return model.kube.pods.map((p) => deserialize<V1Pod>(renderPod(model, p), 'V1Pod'));
    },
    async listDisruptionBudgets() {
      served();
      return model.kube.pdbs.map((p) => deserialize<V1PodDisruptionBudget>(renderPdb(model, p, Date.now()), 'V1PodDisruptionBudget'));
    },
    async listKustomizations() {
      served();
      const flux = model.kube.flux.filter((f) => f.kind === 'Kustomization').map((f) => renderFlux(model, f, Date.now()));
      return customObjects('kustomize.toolkit.fluxcd.io/v1', 'Kustomization', flux);
    },
    async listHelmReleases() {
      served();
      const flux = model.kube.flux.filter((f) => f.kind === 'HelmRelease').map((f) => renderFlux(model, f, Date.now()));
      return customObjects('helm.toolkit.fluxcd.io/v2', 'HelmRelease', flux);
    },
    async listLonghornVolumes() {
      served();
      if (!model.shape.longhorn) return undefined;
      return customObjects(
        'longhorn.io/v1beta2',
        'Volume',
        model.kube.volumes.map((v) => renderVolume(model, state, v, timing, Date.now())),
      );
    },
    async listLonghornReplicas() {
      served();
      return model.shape.longhorn ? model.kube.volumes.flatMap((v) => renderReplicas(model, state, v, timing, Date.now())) : undefined;
    },
    async listLonghornEngines() {
      served();
      return model.shape.longhorn ? model.kube.volumes.map((v) => renderEngine(model, state, v, timing, Date.now())) : undefined;
    },
    async listLonghornSettings() {
      served();
      return model.shape.longhorn ? renderSettings(model) : undefined;
    },
    async listLonghornNodes() {
      served();
      return model.shape.longhorn ? renderLonghornNodes(model) : undefined;
    },
    async listLonghornRecurringJobs() {
      served();
      return model.shape.longhorn ? renderRecurringJobs(model) : undefined;
    },
    async listCnpgClusters() {
      served();
      return (model.shape.cnpg ?? []).length > 0
        ? (model.kube.cnpg ?? []).map((db) => renderCnpgCluster(model, db, Date.now()))
        : undefined;
    },
    async listCnpgScheduledBackups() {
      served();
      return (model.shape.cnpg ?? []).length > 0 ? renderScheduledBackups(model) : undefined;
    },
    async listPrometheusRules() {
      served();
      return model.kube.monitoring === undefined ? undefined : renderPrometheusRules(model);
    },
    async listServiceMonitors() {
      served();
      return model.kube.monitoring === undefined ? undefined : renderServiceMonitors(model);
    },
    async getDaemonSet(namespace, name) {
      served();
      const found = renderDaemonSets(model).find((d) => (d.metadata as Json).namespace === namespace && (d.metadata as Json).name === name);
      return found === undefined ? undefined : deserialize<V1DaemonSet>(found, 'V1DaemonSet');
    },
    async listDeployments() {
      served();
      return renderDeployments(model, Date.now()).map((d) => deserialize<V1Deployment>(d, 'V1Deployment'));
    },
    async listStatefulSets() {
      served();
      return renderStatefulSets(model).map((d) => deserialize<V1StatefulSet>(d, 'V1StatefulSet'));
    },
    async getDeployment(namespace, name) {
      served();
      const found = renderDeployments(model, Date.now()).find(
        (d) => (d.metadata as Json).namespace === namespace && (d.metadata as Json).name === name,
      );
      return found === undefined ? undefined : deserialize<V1Deployment>(found, 'V1Deployment');
    },
    async getNamespace(name) {
      served();
      const ns = model.kube.namespaces.find((n) => n.name === name);
      return ns === undefined ? undefined : deserialize<V1Namespace>(renderNamespace(model, ns), 'V1Namespace');
    },
    async deleteNode(name) {
      served();
      const node = model.nodes.find((n) => n.hostname === name && n.k8sRegistered);
      if (node !== undefined) lifecycle.deleteKubeNode(model, node);
      model.kube.resourceVersion++;
    },
    async requestFluxReconcile(kind, namespace, name, token) {
      served();
      const obj = model.kube.flux.find((f) => f.kind === kind && f.namespace === namespace && f.name === name);
      if (obj === undefined) throw Object.assign(new Error(`${kind} "${namespace}/${name}" not found`), { code: 404 });
      requestReconcile(model, obj, token, Date.now(), timing.fluxReconcileMs);
      model.kube.resourceVersion++;
    },
    async setUnschedulable(name, unschedulable) {
      served();
      const node = model.nodes.find((n) => n.hostname === name && n.k8sRegistered);
      if (node === undefined) throw Object.assign(new Error(`nodes "${name}" not found`), { code: 404 });
      if (unschedulable) lifecycle.cordonByApi(model, node);
      else lifecycle.uncordon(model, node);
      model.kube.resourceVersion++;
    },
    async evictPod(namespace, name) {
      served();
      const answer = answerEviction(model, namespace, name, undefined, Date.now(), (hostname) => {
        const node = model.nodes.find((n) => n.hostname === hostname);
        if (node !== undefined) lifecycle.reconcileCordoned(model, node);
      });
      if (answer.code === 429) return { outcome: 'refused', reason: String(answer.body['message']) };
      if (answer.code >= 400 && answer.code !== 404) throw Object.assign(new Error(String(answer.body['message'])), { code: answer.code });
      return { outcome: 'evicted' };
    },
  };

  const tofu = createTofu({ runner, bin: '/usr/local/bin/tofu', env: {}, timeoutMs: 20_000 });
  const access: ClusterAccess = {
    withSession(cluster, _signal, work) {
      if (cluster.name !== model.name) throw new Error(`the fake cluster is ${model.name}, not ${cluster.name}`);
      const session: ClusterSession = {
        cluster,
        estate: agreeingEstate(cluster),
        credentials: {
          dir: '/run/talos-chatops/session',
          talosconfigPath: TALOSCONFIG,
          kubeconfigPath: '/run/talos-chatops/session/kubeconfig',
          kubeconfig: credentials.kubeconfig,
        },
        outputs: terraformOutputs({ tofu, scrubber: new SecretScrubber() }, cluster),
        kube,
        talosctl: (running, talosctlOptions): Promise<Talosctl> => {
          try {
            const version = options.talosctlBinary ?? clientFor(running, talosctlOptions?.closest === true);
            return Promise.resolve(
              createTalosctl({
                runner,
                binary: `${TALOSCTL_DIR}/talosctl-${version}`,
                talosconfigPath: TALOSCONFIG,
                endpoints: cluster.controlPlanes,
                env: {},
                timeoutMs: 20_000,
              }),
            );
          } catch (error) {
            return Promise.reject(error as Error);
          }
        },
      };
      return work(session);
    },
  };

  const node = (ref: string): SimNode => {
    const found = findNode(model, ref);
    if (found === undefined) throw new Error(`${model.name} has no node ${ref}`);
    return found;
  };
  return {
    model,
    node,
    runsWithFallback(ref, running, fallback) {
      const n = node(ref);
      n.fallbackVersion = fallback;
      n.fallbackSchematic = n.schematic;
      n.talosVersion = running;
    },
    access,
    tofu,
    factory: {
      ...createImageFactory('https://factory.talos.dev', 1000),
      versions: () => Promise.resolve([...state.factoryVersions]),
      isoSha256: () => Promise.resolve({ ok: false, reason: 'the fake cluster serves no ISO' }),
    },
    get calls() {
      return recorder.calls;
    },
    get events() {
      return recorder.events;
    },
    talosctlCalls(command) {
      const words = command.split(' ');
      return recorder.calls.filter((c) => c.bin === 'talosctl' && words.every((w, i) => c.argv[i] === w)).map((c) => [...c.argv]);
    },
    close: () => lifecycle.close(),
    declareSchematic(extensions) {
      const id = schematicId(extensions);
      state.schematics[id] = [...extensions].sort();
      return id;
    },
  };
}
