import { errorText } from '../../../src/chat/error-text.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';
import { restoreClusterRefusal, stagingClusters } from './command.ts';
import { restoreData } from './data.ts';
import { etcdService } from './etcd-service.ts';

/** The reset Talos's disaster-recovery guide asks of every control plane: no drain or etcd leave, the EPHEMERAL partition (etcd's data) wiped, a reboot. */
// `--wait=false`: talosctl returns once the node accepted the request (its tracking is the default); the bot observes the node itself.
export const RESET_ARGS = ['reset', '--graceful=false', '--reboot', '--system-labels-to-wipe=EPHEMERAL', '--wait=false'] as const;

/**
 * Refuses, right before anything destructive, a cluster the inventory in force now does not call
 * staging: a file edited since the plan, a button from an older message, a Retry, a restart all pass here.
 */
export function refuseUnlessStaging(ctx: WalkContext, op: Operation): void {
  const live = ctx.deps.inventory.clusters.find((c) => c.name === op.cluster);
  const refusal =
    live === undefined ? `*${op.cluster}* is no longer in the inventory` : restoreClusterRefusal(live, stagingClusters(ctx.deps.inventory));
  if (refusal !== undefined) throw new StepFailure(`${refusal} Nothing was reset.`, [], { noRollback: true });
}

/**
 * Every control plane reset, one request at a time and back to back: each request recorded before it
 * is made, so a resumed run does not ask a node again. The bot does not wait for one node's reboot
 * before the next reset: a node wiped while the others still run etcd joins them again as a learner
 * (Talos's etcd pre-start, as the simulator models it), which would leave etcd standing. The wait for
 * every node's etcd to wait for its bootstrap is the next step. A Retry is a new attempt: it asks
 * again only a node whose etcd does not wait for a bootstrap.
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
      const { op: recorded } = await ctx.record((o) => {
        const data = restoreData(o);
        if (data.resets[node]?.attempt === attempt) return undefined;
        return { data: { ...data, resets: { ...data.resets, [node]: { issuedAt, attempt } } } };
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
    done.push(
      issued === undefined || issued.attempt !== attempt
        ? `${node} reset requested`
        : `${node} reset requested before a restart, not asked again`,
    );
  }
  return { event: 'control planes reset', detail: done.join('; ') };
}
