import type { ClusterConfig } from '../config/inventory.ts';
import { allNodes } from '../config/inventory.ts';
import type { KubeApi } from '../kube/kube-api.ts';
import type { RunResult } from '../exec/process-runner.ts';
import type { Talosctl } from '../talos/talosctl.ts';
import { parseTalosVersion } from '../talos/parse-version.ts';
import { parseNodeErrors } from '../talos/parse-node-errors.ts';
import { parseHealthOutput } from '../talos/parse-health.ts';
import { parseServiceInfo } from '../talos/parse-service.ts';
import { parseEtcdStatus } from '../talos/parse-etcd-status.ts';
import type { CheckResult } from './check-result.ts';
import { evaluateTalosVersions } from './rules/talos-version.ts';
import { evaluateTalosHealth, skippedCoreDns } from './rules/talos-health.ts';
import { evaluateEtcdService } from './rules/etcd-service.ts';
import { evaluateEtcdStatus } from './rules/etcd-status.ts';
import { evaluateNodes } from './rules/nodes.ts';
import { evaluatePods } from './rules/pods.ts';
import { evaluateFlux } from './rules/flux.ts';
import { checkCilium, checkDisruptionBudgets } from './cluster-checks.ts';
import { gateVerdict } from './rules/verdict.ts';
import { probeFailed } from './rules/probe-failure.ts';
import { DECLARED_CHECK, evaluateDeclaredVersions, type DeclaredState } from './rules/declared-versions.ts';
import type { DeclaredVersions } from '../tofu/declared-versions.ts';
import type { RunningVersions } from './rules/declared-judgement.ts';
import type { Estate } from '../cluster/estate.ts';
import { ESTATE_CHECK, evaluateEstate } from './rules/estate.ts';

export interface GateReport {
  cluster: string;
  passed: boolean;
  stopReasons: string[];
  checks: CheckResult[];
  /** ISO time the gate started. */
  startedAt: string;
  /** Wall time of the whole gate, in ms. */
  durationMs: number;
  /** Wall time of the slowest probe, in ms: the floor the concurrent gate can reach. */
  slowestProbeMs: number;
  /** Versions the nodes reported, each listed once: Talos from `talosctl version`, Kubernetes from the kubelets. Empty when a probe got no answer. */
  versions?: SeenVersions;
  /** Judged against a baseline: what is unwell now and already was before the operation (see `baseline.ts`). */
  alreadyFailing?: string[];
  /** What runs against what Terraform declares, when the gate read the declared versions. */
  declared?: DeclaredState;
}

export interface SeenVersions {
  talos: string[];
  kubernetes: string[];
}

export interface GateDeps {
  talosctl: Talosctl;
  /**
   * The estate the job observed: the gate then checks that its sources agree (check `estate`). An
   * operation's preflight judges it apart, knowing which disagreement the operation resolves.
   */
  estate?: Estate;
  kube: KubeApi;
  /** Upper bound of each probe, in ms; a probe that runs longer is a failed check. */
  probeTimeoutMs: number;
  signal?: AbortSignal;
  /**
   * Addresses of the nodes the operation will drain: disruption budgets are judged for the pods on
   * these. Default: every node of the cluster (the gate on its own, before and after an operation).
   * Empty: no drain follows (the final verification); budgets that allow no disruption are warnings.
   */
  drainNodes?: readonly string[];
  /**
   * `final`: the runbook's final verification on top of the gate ("Cilium is healthy, Flux is
   * ready, and application probes pass"): a Cilium check, and Flux objects and pods must be ready.
   * Default `standard`.
   */
  mode?: 'standard' | 'final';
  /** Only the checks with these ids (a settling check polled again); default every check. */
  only?: readonly string[];
  /**
   * How long `talosctl health` may wait for the cluster to be healthy, in ms: its `--wait-timeout`.
   * talosctl waits out each of its checks itself (default 20 minutes), so a node just back from a
   * reboot is given the time its checks need; the probe's bound is this plus `probeTimeoutMs`, so
   * talosctl gives up first and its last error is reported. Default: just under `probeTimeoutMs`.
   */
  healthWaitMs?: number;
  /**
   * The versions Terraform declares (its outputs, read once per job): with it, the gate also checks
   * them against what every node runs (`declared-versions`, a warning on drift).
   */
  declared?: (signal: AbortSignal) => Promise<DeclaredVersions>;
}

/** A command that failed outright (no output at all) is a probe error, reported with its own last words. */
function failedOutright(result: RunResult): void {
  if (result.exitCode !== 0 && result.stdout.trim() === '') {
    throw new Error(result.stderr.trim().split('\n').pop() || `exited with ${result.exitCode}`);
  }
}

interface Probe {
  id: string;
  title: string;
  /** The probe's own bound, in ms; default the gate's `probeTimeoutMs`. */
  timeoutMs?: number;
  run(signal: AbortSignal): Promise<CheckResult>;
}

/** The runbook's list, each entry one probe; they share nothing, so they run at once. They note the versions they read in `seen`. */
function probes(cluster: ClusterConfig, deps: GateDeps, seen: SeenVersions, byNode: RunningVersions): Probe[] {
  const { talosctl, kube } = deps;
  const controlPlanes = cluster.controlPlanes;
  const nodes = allNodes(cluster);
  // talosctl health must give up before the probe's own deadline, so its last error is reported.
  const healthWaitSeconds =
    deps.healthWaitMs === undefined
      ? Math.max(1, Math.floor(deps.probeTimeoutMs / 1000) - 2)
      : Math.max(1, Math.ceil(deps.healthWaitMs / 1000));
  return [
    {
      id: 'talos-version',
      title: `talosctl version (${nodes.join(', ')})`,
      async run(signal) {
        const result = await talosctl.run(['version'], nodes, { signal, okExitCodes: [0, 1] });
        if (parseNodeErrors(result.stderr).length === 0) failedOutright(result);
        const report = parseTalosVersion(result.stdout);
        seen.talos = distinct(report.servers.map((s) => s.tag));
        for (const server of report.servers) {
          const node = server.node ?? (nodes.length === 1 ? nodes[0] : undefined);
          if (node !== undefined) byNode.talos.set(node, server.tag);
        }
        return evaluateTalosVersions(report, nodes, parseNodeErrors(result.stderr));
      },
    },
    {
      id: 'talos-health',
      title: `talosctl health (via ${controlPlanes[0]!})`,
      ...(deps.healthWaitMs === undefined ? {} : { timeoutMs: healthWaitSeconds * 1000 + deps.probeTimeoutMs }),
      async run(signal) {
        const args = ['health', '--control-plane-nodes', controlPlanes.join(','), '--wait-timeout', `${healthWaitSeconds}s`];
        if (cluster.workers.length > 0) args.push('--worker-nodes', cluster.workers.join(','));
        const result = await talosctl.run(args, [controlPlanes[0]!], { signal, okExitCodes: [0, 1] });
        const parsed = parseHealthOutput(result.stderr);
        // From 1.13, without a CNI installed by Talos, talosctl skips CoreDNS: ask Kubernetes instead.
        const pods = skippedCoreDns(parsed) ? await kube.listPods(signal) : undefined;
        return evaluateTalosHealth(parsed, result.exitCode, pods === undefined ? {} : { pods });
      },
    },
    {
      id: 'etcd-service',
      title: `talosctl service etcd (${controlPlanes.join(', ')})`,
      async run(signal) {
        // One call for every control plane: each reply names its node, and an unreachable node is an error of its own.
        const merged = await talosctl.run(['service', 'etcd'], controlPlanes, { signal, okExitCodes: [0, 1] });
        const mergedInfos = parseServiceInfo(merged.stdout);
        const attributed = controlPlanes.length === 1 || mergedInfos.every((info) => info.node !== undefined);
        // Without NODE lines (a talosctl ≤1.13 talking to the node it uses as endpoint) the replies
        // cannot be told apart: one call per control plane, as the runbook writes it.
        const results = attributed
          ? [merged]
          : await Promise.all(controlPlanes.map((node) => talosctl.run(['service', 'etcd'], [node], { signal, okExitCodes: [0, 1] })));
        const nodesOf = (i: number): string[] => (attributed ? controlPlanes : [controlPlanes[i]!]);
        const infos = results.flatMap((r, i) =>
          parseServiceInfo(r.stdout).map((info) => ({ ...info, node: info.node ?? (nodesOf(i).length === 1 ? nodesOf(i)[0] : undefined) })),
        );
        const check = evaluateEtcdService(infos, controlPlanes);
        const errors = results.flatMap((r, i) => {
          if (r.exitCode === 0 && r.stderr.trim() === '') return [];
          const byNode = parseNodeErrors(r.stderr).map((e) => `${e.node}: ${e.message}`);
          if (byNode.length > 0) return byNode;
          return r.exitCode === 0 ? [] : nodesOf(i).map((node) => `${node}: ${r.stderr.trim().split('\n').pop() ?? 'failed'}`);
        });
        return errors.length === 0 ? check : { ...check, evidence: [...check.evidence, ...errors] };
      },
    },
    {
      id: 'etcd-status',
      title: `talosctl etcd status (${controlPlanes.join(', ')})`,
      async run(signal) {
        const result = await talosctl.run(['etcd', 'status'], controlPlanes, { signal, okExitCodes: [0, 1] });
        if (parseNodeErrors(result.stderr).length === 0) failedOutright(result);
        const rows = result.stdout.trim() === '' ? [] : parseEtcdStatus(result.stdout);
        return evaluateEtcdStatus(rows, controlPlanes, parseNodeErrors(result.stderr));
      },
    },
    {
      id: 'nodes',
      title: 'Kubernetes nodes',
      async run(signal) {
        const listed = await kube.listNodes(signal);
        seen.kubernetes = distinct(listed.map((n) => n.status?.nodeInfo?.kubeletVersion ?? ''));
        byNode.kubernetes.clear();
        for (const n of listed) {
          const version = n.status?.nodeInfo?.kubeletVersion;
          byNode.kubernetes.set(
            n.metadata?.name ?? '?',
            version === undefined || version === '' ? { unknown: 'no kubeletVersion' } : version,
          );
        }
        return evaluateNodes(listed, nodes);
      },
    },
    {
      id: 'pods',
      title: 'Kubernetes pods (all namespaces)',
      run: async (signal) => evaluatePods(await kube.listPods(signal), { mode: deps.mode }),
    },
    {
      id: 'flux',
      title: 'Flux Kustomizations and HelmReleases',
      async run(signal) {
        const [kustomizations, helmReleases] = await Promise.all([kube.listKustomizations(signal), kube.listHelmReleases(signal)]);
        return evaluateFlux(kustomizations, helmReleases, { stallMs: cluster.fluxStallMinutes * 60_000, mode: deps.mode });
      },
    },
    {
      id: 'disruption-budgets',
      title:
        deps.drainNodes === undefined
          ? 'PodDisruptionBudgets'
          : deps.drainNodes.length === 0
            ? 'PodDisruptionBudgets (no drain judged here)'
            : `PodDisruptionBudgets (drain of ${deps.drainNodes.join(', ')})`,
      run: (signal) => checkDisruptionBudgets(kube, deps.drainNodes ?? nodes, signal),
    },
    ...(deps.estate === undefined
      ? []
      : [
          {
            id: ESTATE_CHECK,
            title: 'Nodes by every source (talosconfig, etcd, Kubernetes, Terraform, inventory)',
            run: () => Promise.resolve(evaluateEstate(deps.estate!)),
          },
        ]),
    ...(deps.mode === 'final'
      ? [{ id: 'cilium', title: 'Cilium agent and operator', run: (signal: AbortSignal) => checkCilium(kube, signal) }]
      : []),
  ];
}

async function runProbe(probe: Probe, deps: GateDeps): Promise<CheckResult> {
  const started = performance.now();
  const bound = probe.timeoutMs ?? deps.probeTimeoutMs;
  const timeout = AbortSignal.timeout(bound);
  const signal = deps.signal ? AbortSignal.any([deps.signal, timeout]) : timeout;
  try {
    const result = await probe.run(signal);
    return { ...result, id: probe.id, title: probe.title, durationMs: performance.now() - started };
  } catch (error) {
    const timedOut = timeout.aborted && !(deps.signal?.aborted ?? false);
    const cause = timedOut ? new Error(`timed out after ${Math.round(bound / 1000)}s`) : error;
    return probeFailed(probe.id, probe.title, cause, performance.now() - started);
  }
}

/** Runs the standard health gate: every probe concurrently; a probe that errors or hangs is a failed check. */
export async function runHealthGate(cluster: ClusterConfig, deps: GateDeps): Promise<GateReport> {
  const startedAt = new Date().toISOString();
  const started = performance.now();
  const seen: SeenVersions = { talos: [], kubernetes: [] };
  const byNode: RunningVersions = {
    talos: new Map(),
    // Until the nodes check lists the Nodes, nothing is known of the kubelets.
    kubernetes: new Map([['Kubernetes API', { unknown: 'the Nodes were not listed' }]]),
  };
  const chosen = probes(cluster, deps, seen, byNode).filter((p) => deps.only === undefined || deps.only.includes(p.id));
  const checks = await Promise.all(chosen.map((p) => runProbe(p, deps)));
  let declared: DeclaredState | undefined;
  const readDeclared = deps.declared;
  if (readDeclared !== undefined && deps.only === undefined) {
    // After the others: it compares what they read with what Terraform declares.
    const probe: Probe = {
      id: DECLARED_CHECK,
      title: 'Versions declared in Terraform',
      async run(signal) {
        const running: RunningVersions = {
          talos: new Map(allNodes(cluster).map((node) => [node, byNode.talos.get(node) ?? { unknown: 'no answer to talosctl version' }])),
          kubernetes: byNode.kubernetes,
        };
        const judged = evaluateDeclaredVersions(await readDeclared(signal), running);
        declared = judged.state;
        return judged.check;
      },
    };
    checks.push(await runProbe(probe, deps));
  }
  const verdict = gateVerdict(checks);
  return {
    cluster: cluster.name,
    passed: verdict.passed,
    stopReasons: verdict.stopReasons,
    checks,
    startedAt,
    durationMs: performance.now() - started,
    slowestProbeMs: Math.max(...checks.map((c) => c.durationMs ?? 0)),
    versions: seen,
    ...(declared === undefined ? {} : { declared }),
  };
}

function distinct(values: string[]): string[] {
  return [...new Set(values.filter((v) => v !== ''))].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}
