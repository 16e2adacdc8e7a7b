import type { CheckResult } from '../../../src/health/check-result.ts';
import { checkEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import { runHealthGate } from '../../../src/health/health-gate.ts';
import { rebuildLine, volumeRebuilds } from '../../../src/health/rules/longhorn-rebuild.ts';
import { unchangedSinceBaseline } from '../../../src/health/baseline.ts';
import { observeKubeNode, pollTalosVersion } from '../../../src/talos/observe.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { endpointsAvoiding } from '../shared/node-endpoints.ts';
import { StepFailure } from '../../engine/job-context.ts';

import type { NodeStepContext } from './node-context.ts';
import { probeSignal } from '../../engine/walk.ts';

/** `15 s`, `20 min`: a bound as an operator reads it. */
function span(ms: number): string {
  return ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
}

/**
 * Waits until the node has rebooted (its boot ID is no longer `bootIdBefore`, when known), answers
 * talosctl and Kubernetes calls it Ready, then returns the version it reports. Waiting for the reboot
 * keeps a node that is still staging its upgrade from being read as one that came back unchanged.
 */
export async function waitForNodeBack(ctx: NodeStepContext, node: string, bootIdBefore: string | undefined): Promise<string> {
  const endpoints = endpointsAvoiding(ctx.cluster, node);
  ctx.phase?.(`rebooting, waiting for ${ctx.step.nodeName ?? node} to come back`);
  const onPending = (pending: string): void => ctx.phase?.(`rebooting, waiting for ${ctx.step.nodeName ?? node} to come back`, pending);
  const back = await pollUntil(ctx.deps.clock, { ...clusterWait(ctx.deps, ctx.signal), onPending }, async () => {
    // Both only read, so at once: talosctl's fork runs while the API answers. The version read is bounded, and
    // "not back yet" on a refused or timed-out call: through its only endpoint a rebooting node may not answer at all.
    const [version, kubeRead] = await Promise.all([
      pollTalosVersion(ctx.talosctl, node, { probeMs: ctx.deps.timeouts.probeMs, signal: ctx.signal, endpoints }),
      observeKubeNode(ctx.session.kube, node, ctx.cluster.hostLabel, probeSignal(ctx)).then(
        (kube) => ({ ok: true as const, kube }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
    ]);
    const seen = `talosctl: ${version.reachable ? version.version : version.error}`;
    if (!kubeRead.ok) {
      // The only control plane's reboot takes the Kubernetes API down with it.
      if (ctx.signal?.aborted === true) throw kubeRead.error;
      return { done: false, pending: `${seen}; Kubernetes: no answer (${(kubeRead.error as Error).message})` };
    }
    const { kube } = kubeRead;
    const rebooted = bootIdBefore === undefined || kube.bootId !== bootIdBefore;
    if (rebooted && version.reachable && kube.ready && kube.osVersion === version.version) return { done: true, value: version.version };
    return {
      done: false,
      pending: `${seen}; Kubernetes: ${kube.ready ? 'Ready' : 'not Ready'}${kube.osVersion ? `, ${kube.osVersion}` : ''}${rebooted ? '' : '; not rebooted since the upgrade was requested'}`,
    };
  });
  if (!back.ok) {
    throw new StepFailure(`${node} was not back and Ready within ${Math.round(ctx.deps.timeouts.nodeReadyMs / 1000)} s`, [
      `last observation: ${back.pending}`,
    ]);
  }
  return back.value;
}

/** The gate's checks that a node just back from its reboot passes once its services are up: time clears them, not a person. */
const NODE_CHECKS = ['talos-version', 'etcd-service', 'nodes'];

/** Whether the node runs the target and Kubernetes calls it Ready: then a stop has nothing to roll back, only something to wait for. */
async function onTargetAndReady(ctx: NodeStepContext, node: string): Promise<boolean> {
  try {
    const kube = await observeKubeNode(ctx.session.kube, node, ctx.cluster.hostLabel, probeSignal(ctx));
    return kube.ready && kube.osVersion === ctx.target;
  } catch (error) {
    if (ctx.signal?.aborted === true) throw error;
    return false;
  }
}

/**
 * The checks after a node's reboot (Talos version and services, etcd quorum for a control plane,
 * Kubernetes nodes, then `talosctl health`), polled until they pass or `NODE_READY_TIMEOUT_SECONDS`
 * passes: one failed look at a node that is still starting is not a failure. `talosctl health`
 * waits for the cluster itself (upstream's default is 20 minutes), so it is given what is left of
 * the bound rather than one probe's. The step's reply shows what is still pending; on expiry the
 * stop names it and, for a node on the target and Ready, offers Retry (wait again), never a Rollback.
 * Returns the etcd quorum's summary for a control plane.
 */
export async function waitForChecksAfter(ctx: NodeStepContext, node: string, isControlPlane: boolean): Promise<string | undefined> {
  const bound = ctx.deps.timeouts.nodeReadyMs;
  const deadline = ctx.deps.clock.now().getTime() + bound;
  const gateDeps = { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: ctx.deps.timeouts.probeMs, signal: ctx.signal };
  let failed: CheckResult[] = [];
  let quorum: string | undefined;
  let shown = '';
  const show = async (detail: string): Promise<void> => {
    if (detail === shown) return;
    shown = detail;
    ctx.phase?.(`checks after ${ctx.step.nodeName ?? node}`, detail);
    await ctx.progress(detail);
  };
  const pendingText = (checks: CheckResult[]): string => checks.map((c) => `${c.title}: ${c.summary}`).join('; ');
  const polled = await pollUntil(
    ctx.deps.clock,
    {
      ...clusterWait(ctx.deps, ctx.signal, bound),
      onPending: (pending) => show(`checks after ${node}, up to ${span(bound)}: waiting for ${pending}`),
    },
    async () => {
      // Both only read: read at once, so the second fork and talosctl run while the first does. Settled in their
      // order, so a failure of the node's checks still comes first and nothing is left running.
      const [gateRead, etcdRead] = await Promise.allSettled([
        runHealthGate(ctx.cluster, { ...gateDeps, only: NODE_CHECKS }),
        isControlPlane
          ? checkEtcdQuorum(ctx.talosctl, ctx.cluster.controlPlanes, probeSignal(ctx), endpointsAvoiding(ctx.cluster, node))
          : undefined,
      ]);
      if (gateRead.status === 'rejected') throw gateRead.reason;
      if (etcdRead.status === 'rejected') throw etcdRead.reason;
      failed = gateRead.value.checks.filter((c) => c.status === 'failed');
      const etcd = etcdRead.value;
      if (etcd !== undefined) {
        if (etcd.status === 'failed') failed.push({ ...etcd, title: 'etcd quorum' });
        else quorum = etcd.summary;
      }
      if (failed.length > 0) return { done: false, pending: pendingText(failed) };
      const left = Math.max(1000, deadline - ctx.deps.clock.now().getTime());
      await show(
        `checks after ${node}: Talos services, etcd and Kubernetes nodes pass; talosctl health is waiting for the cluster, up to ${span(left)}`,
      );
      const health = await runHealthGate(ctx.cluster, { ...gateDeps, only: ['talos-health'], healthWaitMs: left });
      failed = health.checks.filter((c) => c.status === 'failed');
      return failed.length > 0 ? { done: false, pending: pendingText(failed) } : { done: true, value: undefined };
    },
  );
  if (polled.ok) return quorum;
  const evidence = failed.flatMap((c) => [`${c.title}: ${c.summary}`, ...c.evidence.map((line) => `  ${line}`)]);
  const reason = `the checks after ${node} still did not pass within ${span(bound)}: ${failed.map((c) => c.title).join(', ')} still pending`;
  if (await onTargetAndReady(ctx, node)) {
    throw new StepFailure(reason, evidence, {
      retry: `waits again, up to ${span(bound)}, for the checks after ${node}; ${node} already runs ${ctx.target} and is Ready, and is not upgraded again`,
      resume: 'observe',
      noRollback: true,
    });
  }
  throw new StepFailure(reason, evidence);
}

/**
 * Waits until every Longhorn volume is healthy, so draining a node never takes a second replica
 * of a volume away. A detached volume (robustness `unknown`) is not degraded. Skipped where the
 * cluster has no Longhorn (its CRDs do not answer) or the inventory turns the check off. A volume
 * that was already degraded before the operation and that no node of it made worse (see
 * `unchangedSinceBaseline`) is not waited for: returned, so the step names it.
 *
 * Bounded by `LONGHORN_REBUILD_TIMEOUT_SECONDS`, not the node-ready timeout, both after a node and
 * before the next: what is not healthy then is the rebuild of a rebooted node's replicas, which
 * copies data and may take far longer than a reboot. The step's reply lists the volumes still
 * rebuilding with each rebuild's progress, edited as it changes. On expiry the stop offers Retry
 * (wait again) and, after a node, no Rollback: the node is upgraded and healthy, Longhorn is slow.
 */
export async function waitForLonghorn(ctx: NodeStepContext, when: 'before' | 'after'): Promise<string[]> {
  if (ctx.cluster.longhorn === false) return [];
  const node = ctx.step.node!;
  const bound = ctx.deps.timeouts.longhornRebuildMs;
  // After its upgrade this node is one the operation changed, whether or not the step recorded it before this run.
  const changed = [...(ctx.changedNodes ?? []), ...(when === 'after' && ctx.step.nodeName !== undefined ? [ctx.step.nodeName] : [])];
  let waiting: string[] = [];
  let asBefore: string[] = [];
  let shown = '';
  const healthy = await pollUntil(
    ctx.deps.clock,
    {
      ...clusterWait(ctx.deps, ctx.signal, bound),
      onPending: async (pending) => {
        // Edited only when what is pending changes: the rebuild's progress, a volume done.
        if (pending === shown) return;
        shown = pending;
        ctx.phase?.(`waiting for Longhorn ${when} ${ctx.step.nodeName ?? node}: ${waiting.length} volume(s) not healthy`, pending);
        await ctx.progress(pending);
      },
    },
    async () => {
      const volumes = await ctx.session.kube.listLonghornVolumes(probeSignal(ctx));
      if (volumes === undefined) return { done: true, value: undefined };
      const unhealthy = volumeRebuilds(volumes, [], []);
      asBefore = [];
      if (unhealthy.length === 0) return { done: true, value: undefined };
      const [engines, replicas] = await Promise.all([
        ctx.session.kube.listLonghornEngines(probeSignal(ctx)),
        ctx.session.kube.listLonghornReplicas(probeSignal(ctx)),
      ]);
      const rebuilds = volumeRebuilds(volumes, engines, replicas);
      const held = rebuilds.filter((r) => !unchangedSinceBaseline(r, ctx.baseline, changed));
      asBefore = rebuilds.filter((r) => !held.includes(r)).map(rebuildLine);
      waiting = held.map(rebuildLine);
      if (held.length === 0) return { done: true, value: undefined };
      return {
        done: false,
        pending: `Longhorn ${when} ${node}, up to ${span(bound)}: ${waiting.length} volume(s) not healthy yet: ${waiting.join('; ')}`,
      };
    },
  );
  if (healthy.ok) return asBefore;
  const reason = `Longhorn volumes are still not healthy ${when} ${node} after ${span(bound)}: ${waiting.length} volume(s) still rebuilding or degraded`;
  if (when === 'after') {
    throw new StepFailure(reason, waiting, {
      retry: `waits again, up to ${span(bound)}, for Longhorn to finish rebuilding; ${node} is already upgraded and is not upgraded again`,
      resume: 'observe',
      noRollback: true,
    });
  }
  throw new StepFailure(`${reason}; draining ${node} now could take a second replica, so it was not touched`, waiting, {
    retry: `nothing was changed by this step; Retry waits again, up to ${span(bound)}, for Longhorn to finish rebuilding`,
    nodeUnchanged: true,
  });
}
