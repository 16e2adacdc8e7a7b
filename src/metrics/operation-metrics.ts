import type { Operation, OperationState } from '../ops/operation.ts';
import type { Metrics } from './metrics.ts';

/** States in which an operation has come to an end; `failed` may later become `cancelled`, which is not a second end. */
const ENDED: readonly OperationState[] = ['refused', 'completed', 'failed', 'cancelled'];
const STEP_ENDED = new Set(['done', 'skipped', 'failed']);

/**
 * The operation store's change hook. A change is seen only by the replica whose write
 * won, so each end and each step is counted once across replicas.
 */
export function recordOperationChange(metrics: Pick<Metrics, 'operations' | 'stepDuration'>): (before: Operation, after: Operation) => void {
  return (before, after) => {
    if (!ENDED.includes(before.state) && ENDED.includes(after.state)) {
      metrics.operations.inc({ kind: after.kind, result: after.state });
    }
    for (const step of after.steps) {
      const previous = before.steps.find((s) => s.id === step.id);
      if (!STEP_ENDED.has(step.status) || (previous !== undefined && STEP_ENDED.has(previous.status))) continue;
      if (step.startedAt === undefined || step.endedAt === undefined) continue;
      const seconds = (Date.parse(step.endedAt) - Date.parse(step.startedAt)) / 1000;
      if (Number.isFinite(seconds) && seconds >= 0) metrics.stepDuration.observe({ kind: step.kind, status: step.status }, seconds);
    }
  };
}

/** Operations waiting for an approver, by cluster, for the scrape-time gauge: each cluster's lock names its one operation. */
export async function waitingApprovalsByCluster(
  clusters: string[],
  holder: (cluster: string) => Promise<string | undefined>,
  get: (id: string) => Promise<Operation | undefined>,
): Promise<Record<string, number>> {
  const entries = await Promise.all(
    clusters.map(async (cluster) => {
      const opId = await holder(cluster);
      const op = opId === undefined ? undefined : await get(opId);
      return [cluster, op?.state === 'awaiting-approval' ? 1 : 0] as const;
    }),
  );
  return Object.fromEntries(entries);
}
