import type { Job } from 'bullmq';
import type { Operation } from '../../src/ops/operation.ts';
import type { OperationJobData } from '../../src/queue/job-schemas.ts';
import { enqueueEnded, enqueuePlanExpiry as queuePlanExpiry } from '../../src/queue/jobs.ts';
import type { OpsJobDeps } from './job-context.ts';
import { refreshRoot } from './root-message.ts';

/** Queues the end of a plan's offer: PLAN_TTL_MINUTES after it was made. */
export async function enqueuePlanExpiry(deps: Pick<OpsJobDeps, 'opsQueue' | 'timeouts' | 'now'>, op: Operation): Promise<void> {
  const delay = Math.max(0, Date.parse(op.createdAt) + deps.timeouts.planTtlMs - deps.now().getTime());
  await queuePlanExpiry(deps.opsQueue, op.id, delay + 1000);
}

/**
 * A plan nobody started within its time ends: what it showed may no longer match the cluster
 * (and a Terraform plan goes stale), so its buttons go and it gives back what it kept on disk.
 * Start refuses an old plan on its own too; this makes the message say so.
 */
export function createPlanExpiryJob(deps: OpsJobDeps) {
  return async (job: Job<OperationJobData>): Promise<void> => {
    const { opId } = job.data;
    const now = deps.now();
    const minutes = Math.round(deps.timeouts.planTtlMs / 60_000);
    const reason = `the plan expired: nobody started it within ${minutes} minutes; run the command again for a fresh plan`;
    const expired = await deps.audit.record(
      opId,
      { actor: 'bot', event: 'plan expired', detail: `not started within ${minutes} minutes` },
      undefined,
      (o) =>
        o.state === 'planned' && Date.parse(o.createdAt) + deps.timeouts.planTtlMs <= now.getTime()
          ? { ...o, state: 'cancelled', planNonce: undefined, endedAt: now.toISOString(), reason }
          : undefined,
    );
    if (expired.state !== 'cancelled' || expired.endedAt !== now.toISOString()) return;
    await refreshRoot(deps, expired);
    await enqueueEnded(deps.opsQueue, expired);
  };
}
