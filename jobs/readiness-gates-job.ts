import { readFile } from 'node:fs/promises';
import type { V1Node } from '@kubernetes/client-node';
import type { Job } from 'bullmq';
import type { ChatPort } from '../src/port/chat-port.ts';
import { errorText } from '../src/chat/error-text.ts';
import {
  readinessErrorMessage,
  readinessGateMessage,
  readinessRunningMessage,
  readinessVerdictMessage,
} from '../src/chat/readiness-report.ts';
import type { ClusterAccess, ClusterSession } from '../src/cluster/cluster-session.ts';
import { kubeconfigServer } from '../src/cluster/credentials.ts';
import { matchingTalosctl } from '../src/cluster/matching-talosctl.ts';
import { allNodes, declaredNodes, type ClusterConfig, type Inventory } from '../src/config/inventory.ts';
import { sanitizeErrorText } from '../src/exec/sanitize-error-text.ts';
import type { Logger } from '../src/log/logger.ts';
import type { GateSignOffStore } from '../src/ops/gate-signoffs.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';
import type { GatesJobData } from '../src/queue/job-schemas.ts';
import type { Clock } from '../src/time/clock.ts';
import { withDeadline } from '../src/time/deadline.ts';
import { pointRequesterToReport, reportTarget } from './report-pointer.ts';
import { stagingShapeFor } from './staging-shape-read.ts';
import {
  evaluateReadiness,
  type ExtensionsObserved,
  type Observed,
  type ReadinessObservations,
  type ReadinessReport,
} from '../src/rules/readiness-gates.ts';
import type { ClusterShape } from '../src/rules/gate-signoff.ts';
import type { StagingRecords } from '../src/rules/readiness-manual.ts';
import { controlPlaneVips } from '../src/talos/machine-config-vips.ts';
import { extensionsFromGet } from '../src/talos/parse-get.ts';
import { findNodeByAddress, getOnEachNode } from '../src/talos/observe.ts';
import type { UserVolumesByNode } from '../src/rules/readiness/longhorn-storage.ts';
import { userVolumeTypes } from '../src/talos/user-volume-types.ts';
import { talosconfigEndpoints } from '../src/talos/talosconfig-endpoints.ts';

export interface ReadinessGatesJobDeps {
  inventory: Inventory;
  access: ClusterAccess;
  store: Pick<OperationStore, 'listForCluster'>;
  chat: ChatPort;
  logger: Logger;
  /** Upper bound of each probe, in ms; a probe that runs longer is a failed gate. */
  probeTimeoutMs: number;
  clock: Pick<Clock, 'now' | 'sleep'>;
  /** The approvers' sign-offs of the by-hand gates; each report is kept as the one its [Sign off] buttons sign. */
  signOffs: Pick<GateSignOffStore, 'list' | 'saveReport'>;
  /** How long a sign-off counts, in ms. */
  signOffMaxAgeMs: number;
}

/** Operations of staging read for rehearsals: enough to reach back past months of snapshots. */
const STAGING_RECORDS = 200;

/** Runs one probe under its own deadline; an error or a timeout becomes the reason shown on the gates that needed it. */
async function observe<T>(
  clock: Pick<Clock, 'sleep'>,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  probe: (signal: AbortSignal) => Promise<T>,
): Promise<Observed<T>> {
  try {
    // Not every probe takes a signal (a file read, the operation store): the deadline ends the wait on it all the same.
    const outcome = await withDeadline(clock, timeoutMs, probe, signal ? { signal } : {});
    return outcome.ok ? { ok: true, value: outcome.value } : { ok: false, error: `timed out after ${Math.round(timeoutMs / 1000)}s` };
  } catch (error) {
    const reason = error instanceof Error ? error : new Error('cancelled');
    return { ok: false, error: sanitizeErrorText(errorText(reason)).split('\n')[0] ?? 'failed' };
  }
}

/**
 * Every node's extensions, each node's answer apart ({@link getOnEachNode}: a failed read of all of
 * them is asked again node by node before one is blamed). Only when no node answers is the probe
 * itself unreadable.
 */
async function readExtensions(
  session: ClusterSession,
  cluster: ClusterConfig,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<ExtensionsObserved> {
  const talosctl = await matchingTalosctl(session, timeoutMs, signal);
  const reads = [...(await getOnEachNode(talosctl, 'extensions', allNodes(cluster), { signal }))];
  const failed = reads.flatMap(([node, read]) => (read.reachable ? [] : [{ node, message: read.error }]));
  if (failed.length === reads.length) throw new Error(failed[0]?.message ?? 'talosctl get extensions answered for no node');
  return {
    extensions: reads.flatMap(([node, read]) =>
      read.reachable ? extensionsFromGet(read.items).map((e) => ({ ...e, node: e.node ?? node })) : [],
    ),
    nodeErrors: failed,
  };
}

/**
 * Every observed node's Talos user volumes, by its Kubernetes node name (the name Longhorn's nodes
 * carry). A node Kubernetes does not list is left out: Longhorn has no disk there to judge.
 */
async function readUserVolumes(
  session: ClusterSession,
  cluster: ClusterConfig,
  kubeNodes: Observed<V1Node[]>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<UserVolumesByNode> {
  if (!kubeNodes.ok) throw new Error(`the Kubernetes nodes are unknown (${kubeNodes.error})`);
  const nameOf = new Map<string, string>();
  for (const address of allNodes(cluster)) {
    const name = findNodeByAddress(kubeNodes.value, address)?.metadata?.name;
    if (name !== undefined) nameOf.set(address, name);
  }
  if (nameOf.size === 0) return new Map();
  const talosctl = await matchingTalosctl(session, timeoutMs, signal);
  const byAddress = await userVolumeTypes(talosctl, [...nameOf.keys()], signal);
  return new Map([...byAddress].map(([address, volumes]) => [nameOf.get(address)!, volumes]));
}

async function stagingRecords(deps: ReadinessGatesJobDeps): Promise<StagingRecords | undefined> {
  const staging = deps.inventory.clusters.find((c) => c.environment === 'staging');
  if (staging === undefined) return undefined;
  const operations = await observe(deps.clock, deps.probeTimeoutMs, undefined, () =>
    deps.store.listForCluster(staging.name, STAGING_RECORDS),
  );
  return { cluster: staging.name, controlPlanes: declaredNodes(staging).controlPlanes?.length, operations };
}

/** Looks at the cluster the way an operator would, every probe at once. */
async function observeCluster(
  session: ClusterSession,
  cluster: ClusterConfig,
  deps: ReadinessGatesJobDeps,
  signal: AbortSignal | undefined,
): Promise<ReadinessObservations> {
  const within = <T>(probe: (s: AbortSignal) => Promise<T>): Promise<Observed<T>> =>
    observe(deps.clock, deps.probeTimeoutMs, signal, probe);
  const [
    nodes,
    talosEndpoints,
    extensions,
    longhornNamespace,
    kustomizations,
    longhornSettings,
    longhornNodes,
    staging,
    recurringJobs,
    cnpgClusters,
    scheduledBackups,
    prometheusRules,
    serviceMonitors,
    workloads,
    stagingShape,
  ] = await Promise.all([
    within((s) => session.kube.listNodes(s)),
    // Only the endpoints leave this read: the file also holds the cluster's client key.
    within(async () => talosconfigEndpoints(await readFile(session.credentials.talosconfigPath, 'utf8'))),
    within((s) => readExtensions(session, cluster, deps.probeTimeoutMs, s)),
    within((s) => session.kube.getNamespace('longhorn-system', s)),
    within((s) => session.kube.listKustomizations(s)),
    within((s) => session.kube.listLonghornSettings(s)),
    within((s) => session.kube.listLonghornNodes(s)),
    stagingRecords(deps),
    within((s) => session.kube.listLonghornRecurringJobs(s)),
    within((s) => session.kube.listCnpgClusters(s)),
    within((s) => session.kube.listCnpgScheduledBackups(s)),
    within((s) => session.kube.listPrometheusRules(s)),
    within((s) => session.kube.listServiceMonitors(s)),
    // List items carry no kind: tag each so the evidence can name it.
    within(async (s) => [
      ...(await session.kube.listDeployments(s)).map((d) => ({ kind: 'Deployment' as const, metadata: d.metadata, spec: d.spec })),
      ...(await session.kube.listStatefulSets(s)).map((d) => ({ kind: 'StatefulSet' as const, metadata: d.metadata, spec: d.spec })),
    ]),
    stagingShapeFor(cluster.environment, deps.inventory, deps.access, within),
  ]);
  // Node names first: Longhorn names its nodes as Kubernetes does, talosctl asks by address.
  const userVolumes = await within((s) => readUserVolumes(session, cluster, nodes, deps.probeTimeoutMs, s));
  // Only the server leaves the kubeconfig: the endpoint as the cluster really is.
  const server = await within(() => kubeconfigServer(session.credentials.kubeconfig));
  // Only the virtual IPs leave the machine configuration: it also holds the cluster's keys.
  const controlPlaneVipReads = await within(async (s) =>
    controlPlaneVips(await matchingTalosctl(session, deps.probeTimeoutMs, s), cluster.controlPlanes, s),
  );
  return {
    nodes,
    talosEndpoints,
    extensions,
    longhornNamespace,
    kustomizations,
    longhornSettings,
    longhornNodes,
    userVolumes,
    backups: { recurringJobs, cnpgClusters, scheduledBackups },
    monitoring: { rules: prometheusRules, serviceMonitors },
    workloads,
    staging,
    stagingShape,
    kubeconfigServer: server,
    controlPlaneVips: controlPlaneVipReads,
  };
}

/** `/talos gates`: post a root message, check every production gate, edit in the verdict, thread one reply per gate. */
export function createReadinessGatesJob(deps: ReadinessGatesJobDeps) {
  return async (job: Job<GatesJobData>, signal?: AbortSignal): Promise<{ ready: boolean }> => {
    const { cluster, log, data } = reportTarget(deps, job.id, job.data);

    let rootTs = data.rootTs;
    if (rootTs === undefined) {
      rootTs = (
        await deps.chat.post(data.channel, readinessRunningMessage(data), { key: `${job.id}-root`, maybeSent: job.attemptsStarted > 1 })
      ).ts;
      await job.updateData({ ...data, rootTs });
      await pointRequesterToReport(deps.chat, log, data, 'readiness report', rootTs);
    }
    log.info({ rootTs }, 'readiness gates started');
    let report: ReadinessReport;
    let shape: ClusterShape;
    try {
      const observed = await deps.access.withSession(cluster, signal, async (session) => ({
        observed: await observeCluster(session, session.cluster, deps, signal),
        seen: session.cluster,
      }));
      // The nodes as observed, not as the inventory lists them: a sign-off holds for this shape only.
      shape = { controlPlanes: [...observed.seen.controlPlanes], workers: [...observed.seen.workers] };
      const signOffs = await deps.signOffs.list(cluster.name);
      if (signOffs.unreadable.length > 0)
        log.warn({ gates: signOffs.unreadable }, 'sign-offs that do not read back as one are left out of the verdict');
      const now = deps.clock.now();
      report = evaluateReadiness(observed.seen, {
        ...observed.observed,
        signOffs: { given: signOffs.given, shape, now, maxAgeMs: deps.signOffMaxAgeMs },
      });
    } catch (error) {
      log.warn({ err: errorText(error) }, 'readiness gates could not run');
      await deps.chat.update(data.channel, rootTs, readinessErrorMessage(data, errorText(error)));
      return { ready: false };
    }
    const checkedAt = deps.clock.now().toISOString();
    // Kept before the buttons are posted: a [Sign off] signs the gates of this report, for this shape.
    const gatesJob = job.id ?? rootTs;
    const byHand = report.gates.filter((g) => g.status === 'manual').map((g) => g.id);
    await deps.signOffs.saveReport(cluster.name, { job: gatesJob, checkedAt, shape, byHand });
    await deps.chat.update(data.channel, rootTs, readinessVerdictMessage(report, data, checkedAt));
    for (const gate of report.gates) {
      await deps.chat.reply(data.channel, rootTs, readinessGateMessage(gate, { cluster: cluster.name, gatesJob }), {
        key: `${job.id}-gate-${gate.id}`,
      });
    }
    log.info({ ready: report.ready, ...report.counts }, 'readiness gates finished');
    return { ready: report.ready };
  };
}
