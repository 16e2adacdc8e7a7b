import { errorText } from '../../../src/chat/error-text.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { WALKING } from '../../../src/ops/state-machine.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { restoreClusterRefusal, stagingClusters } from './command.ts';
import { restoreData } from './data.ts';
import { etcdService, serviceWords } from './etcd-service.ts';

/** The reset Talos's disaster-recovery guide asks of every control plane: no drain or etcd leave, the EPHEMERAL partition (etcd's data) wiped, a reboot. */
export const RESET_ARGS = ['reset', '--graceful=false', '--reboot', '--system-labels-to-wipe=EPHEMERAL'] as const;

/**
 * Refuses, right before anything destructive, a cluster the inventory in force now does not call
 * staging: a file edited since the plan, a button from an older message, a Retry, a restart all pass here.
 */
export function refuseUnlessStaging(ctx: WalkContext, op: Operation): void {
  const live = ctx.deps.inventory.clusters.find((c) => c.name === op.cluster);
  const refusal =
    live === undefined
      ? `*${op.cluster}* is no longer in the inventory`
      : restoreClusterRefusal(live, stagingClusters(ctx.deps.inventory));
  if (refusal !== undefined) throw new StepFailure(`${refusal} Nothing was reset.`, [], { noRollback: true });
}

/** Waits until the node, reset, rebooted with etcd waiting for its bootstrap. */
async function waitPreparing(ctx: WalkContext, node: string): Promise<void> {
  const seen = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    const service = await etcdService(ctx, node);
    return service.read && service.state === 'Preparing'
      ? { done: true, value: undefined }
      : { done: false, pending: serviceWords(node, service) };
  });
  if (!seen.ok) {
    throw new StepFailure(
      `${node} was asked to reset, but its etcd does not wait for a bootstrap (service etcd: Preparing). Check the node's console; a Retry (two approvals again) looks at every control plane first and resets only one that shows no reset`,
      [seen.pending],
      { noRollback: true },
    );
  }
}

/**
 * Every control plane reset, one at a time: each request recorded before it is made, so a resumed run
 * looks at the node (etcd waiting for its bootstrap) instead of asking again. A Retry is a new attempt:
 * it asks again only a node whose etcd does not wait for a bootstrap.
 */
export async function resetControlPlanes(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const attempt = step.startedAt ?? op.startedAt ?? '';
  const done: string[] = [];
  for (const [index, node] of ctx.cluster.controlPlanes.entries()) {
    ctx.phase?.(`resetting control plane ${index + 1} of ${ctx.cluster.controlPlanes.length}: ${node}`);
    const fresh = restoreData((await ctx.deps.store.get(op.id)) ?? op);
    const issued = fresh.resets[node];
    const service = await etcdService(ctx, node);
    if (service.read && service.state === 'Preparing') {
      done.push(`${node} waits for bootstrap${issued === undefined ? ' (found so)' : ''}`);
      continue;
    }
    if (issued === undefined || issued.attempt !== attempt) {
      // The destructive call: the environment once more from the inventory in force, then the request recorded, then made.
      refuseUnlessStaging(ctx, op);
      const issuedAt = ctx.deps.now().toISOString();
      const { op: recorded } = await ctx.deps.store.update(op.id, (o) => {
        if (!WALKING.includes(o.state)) return undefined;
        const data = restoreData(o);
        if (data.resets[node]?.attempt === attempt) return undefined;
        return { ...o, data: { ...data, resets: { ...data.resets, [node]: { issuedAt, attempt } } } };
      });
      // Another run recorded it first (two replicas): that run asks; this one only looks.
      if (restoreData(recorded).resets[node]?.issuedAt === issuedAt) {
        try {
          await ctx.talosctl.run([...RESET_ARGS], [node], { signal: ctx.signal, endpoints: [node], timeoutMs: ctx.deps.timeouts.stepMs });
        } catch (error) {
          if (ctx.signal?.aborted) throw error;
          throw new StepFailure(`talosctl reset of ${node} failed: ${errorText(error)}`, [], { noRollback: true });
        }
      }
    }
    ctx.phase?.(`waiting for ${node} to reboot with etcd waiting for its bootstrap`);
    await waitPreparing(ctx, node);
    done.push(`${node} reset, etcd waits for bootstrap`);
  }
  return { event: 'control planes reset', detail: done.join('; ') };
}

/** Every control plane's etcd waits for the bootstrap, as the guide says to check before it. */
export async function waitForBootstrap(ctx: WalkContext): Promise<StepResult> {
  const nodes = ctx.cluster.controlPlanes;
  ctx.phase?.('waiting until etcd waits for bootstrap on every control plane');
  const seen = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    const services = await Promise.all(nodes.map(async (node) => ({ node, service: await etcdService(ctx, node) })));
    const waiting = services.filter(({ service }) => !(service.read && service.state === 'Preparing'));
    return waiting.length === 0
      ? { done: true, value: undefined }
      : { done: false, pending: waiting.map(({ node, service }) => serviceWords(node, service)).join('; ') };
  });
  if (!seen.ok) {
    throw new StepFailure('etcd does not wait for a bootstrap on every control plane, so no bootstrap was issued', [seen.pending], {
      noRollback: true,
    });
  }
  return { event: 'etcd waits for bootstrap', detail: `every control plane (${nodes.join(', ')}): service etcd Preparing` };
}
