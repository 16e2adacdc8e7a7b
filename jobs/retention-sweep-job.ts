import type { Queue } from 'bullmq';
import type { ClusterLock } from '../src/ops/cluster-lock.ts';
import type { Logger } from '../src/log/logger.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';
import type { Clock } from '../src/time/clock.ts';
import { sweepEndedPlans } from './plan-sweep.ts';

export interface RetentionSweepDeps {
  store: Pick<OperationStore, 'sweep' | 'get'>;
  lock: Pick<ClusterLock, 'holder'>;
  logger: Logger;
  clock: Pick<Clock, 'now'>;
  /** `OPERATION_RETENTION_DAYS`, in ms. */
  retentionMs: number;
  /** The queues whose finished jobs older than `jobRetentionMs` are removed. */
  queues?: Pick<Queue, 'clean' | 'name'>[];
  /** `JOB_RETENTION_DAYS`, in ms. */
  jobRetentionMs?: number;
  /** The plan space (`PLAN_DIR`): the kept plans of ended or unknown operations are deleted. */
  planDir?: string;
}

/** Finished jobs removed per queue, state and sweep: the next sweep takes the rest. */
const CLEAN_LIMIT = 5000;

/**
 * Keeps Redis bounded: finished operations expire by their own TTL (set when they end); this
 * trims the indexes that listed them, and ends the life of failed operations that no longer
 * hold their cluster (a failed one that holds it waits for an operator, however old), then deletes
 * the kept plans of operations that ended or that Redis forgot.
 */
export function createRetentionSweepJob(deps: RetentionSweepDeps) {
  return async (): Promise<{ dropped: number; cleaned: number; plans: number }> => {
    const cutoff = new Date(deps.clock.now().getTime() - deps.retentionMs);
    const dropped = await deps.store.sweep(cutoff, async (op) => (await deps.lock.holder(op.cluster)) === op.id);
    if (dropped.length > 0)
      deps.logger.info(
        { dropped: dropped.length, cutoff: cutoff.toISOString() },
        'retention sweep dropped expired operations from the indexes',
      );
    // BullMQ applies a job's age limit only when another job of its queue finishes; a quiet queue is cleaned here.
    let cleaned = 0;
    if (deps.jobRetentionMs !== undefined) {
      for (const queue of deps.queues ?? []) {
        for (const state of ['completed', 'failed'] as const)
          cleaned += (await queue.clean(deps.jobRetentionMs, CLEAN_LIMIT, state)).length;
      }
    }
    // After the operations whose life just ended, so their plans go in the same sweep.
    const plans =
      deps.planDir === undefined
        ? []
        : await sweepEndedPlans({ store: deps.store, planDir: deps.planDir, logger: deps.logger, now: () => deps.clock.now() });
    return { dropped: dropped.length, cleaned, plans: plans.length };
  };
}
