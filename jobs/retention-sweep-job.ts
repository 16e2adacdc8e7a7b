import type { ClusterLock } from '../src/ops/cluster-lock.ts';
import type { Logger } from '../src/log/logger.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';

export const RETENTION_SWEEP_JOB_NAME = 'retention-sweep';

export interface RetentionSweepDeps {
  store: OperationStore;
  lock: ClusterLock;
  logger: Logger;
  now: () => Date;
  /** `OPERATION_RETENTION_DAYS`, in ms. */
  retentionMs: number;
}

/**
 * Keeps Redis bounded: finished operations expire by their own TTL (set when they end); this
 * trims the indexes that listed them, and ends the life of failed operations that no longer
 * hold their cluster (a failed one that holds it waits for an operator, however old).
 */
export function createRetentionSweepJob(deps: RetentionSweepDeps) {
  return async (): Promise<{ dropped: number }> => {
    const cutoff = new Date(deps.now().getTime() - deps.retentionMs);
    const dropped = await deps.store.sweep(cutoff, async (op) => (await deps.lock.holder(op.cluster)) === op.id);
    if (dropped.length > 0) deps.logger.info({ dropped: dropped.length, cutoff: cutoff.toISOString() }, 'retention sweep dropped expired operations from the indexes');
    return { dropped: dropped.length };
  };
}
