import { unhealthyVolumes } from '../../../src/health/rules/longhorn.ts';
import { observeKubeNode, pollTalosVersion } from '../../../src/talos/observe.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { endpointsAvoiding } from '../shared/node-endpoints.ts';
import { StepFailure } from '../../engine/job-context.ts';

import { probeSignal, type NodeStepContext } from './node-context.ts';

/**
 * Waits until the node has rebooted (its boot ID is no longer `bootIdBefore`, when known), answers
 * talosctl and Kubernetes calls it Ready, then returns the version it reports. Waiting for the reboot
 * keeps a node that is still staging its upgrade from being read as one that came back unchanged.
 */
export async function waitForNodeBack(ctx: NodeStepContext, node: string, bootIdBefore: string | undefined): Promise<string> {
  const endpoints = endpointsAvoiding(ctx.cluster, node);
  const back = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    // Bounded, and "not back yet" on a refused or timed-out call: through its only endpoint a rebooting node may not answer at all.
    const version = await pollTalosVersion(ctx.talosctl, node, { probeMs: ctx.deps.timeouts.probeMs, signal: ctx.signal, endpoints });
    const seen = `talosctl: ${version.reachable ? version.version : version.error}`;
    try {
      const kube = await observeKubeNode(ctx.session.kube, node, ctx.cluster.hostLabel, probeSignal(ctx));
      const rebooted = bootIdBefore === undefined || kube.bootId !== bootIdBefore;
      if (rebooted && version.reachable && kube.ready && kube.osVersion === version.version) return { done: true, value: version.version };
      return {
        done: false,
        pending: `${seen}; Kubernetes: ${kube.ready ? 'Ready' : 'not Ready'}${kube.osVersion ? `, ${kube.osVersion}` : ''}${rebooted ? '' : '; not rebooted since the upgrade was requested'}`,
      };
    } catch (error) {
      // The only control plane's reboot takes the Kubernetes API down with it.
      if (ctx.signal?.aborted === true) throw error;
      return { done: false, pending: `${seen}; Kubernetes: no answer (${(error as Error).message})` };
    }
  });
  if (!back.ok) {
    throw new StepFailure(`${node} was not back and Ready within ${Math.round(ctx.deps.timeouts.nodeReadyMs / 1000)} s`, [
      `last observation: ${back.pending}`,
    ]);
  }
  return back.value;
}

/**
 * Waits until every Longhorn volume is healthy, so draining a node never takes a second replica
 * of a volume away. A detached volume (robustness `unknown`) is not degraded. Skipped where the
 * cluster has no Longhorn (its CRDs do not answer) or the inventory turns the check off.
 */
export async function waitForLonghorn(ctx: NodeStepContext, when: string): Promise<void> {
  if (ctx.cluster.longhorn === false) return;
  let waiting: string[] = [];
  const healthy = await pollUntil(
    ctx.deps.clock,
    { ...clusterWait(ctx.deps, ctx.signal), onPending: (pending) => ctx.progress(pending) },
    async () => {
      const volumes = await ctx.session.kube.listLonghornVolumes(probeSignal(ctx));
      waiting = volumes === undefined ? [] : unhealthyVolumes(volumes);
      return waiting.length === 0
        ? { done: true, value: undefined }
        : { done: false, pending: `waiting for ${waiting.length} Longhorn volume(s) to be healthy ${when}` };
    },
  );
  if (!healthy.ok)
    throw new StepFailure(`Longhorn volumes are still not healthy ${when}; draining a node now could take a second replica`, waiting);
}
