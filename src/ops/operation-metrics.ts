import type { ClusterHold, Metrics } from '../metrics/metrics.ts';
import type { Operation, OperationState } from './operation.ts';

/** States in which an operation has come to an end; `failed` may later become `cancelled`, which is not a second end. */
const ENDED: readonly OperationState[] = ['refused', 'completed', 'failed', 'cancelled'];
const STEP_ENDED = new Set(['done', 'skipped', 'failed']);

/**
 * The operation store's change hook. A change is seen only by the replica whose write
 * won, so each end and each step is counted once across replicas.
 */
export function recordOperationChange(
  metrics: Pick<Metrics, 'operations' | 'stepDuration'>,
): (before: Operation, after: Operation) => void {
  return (before, after) => {
    if (!ENDED.includes(before.state) && ENDED.includes(after.state)) {
      metrics.operations.inc({ talos_cluster: after.cluster, kind: after.kind, result: after.state });
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

/** Unix seconds of an ISO time, or undefined for a missing or unreadable one. */
function unixSeconds(iso: string | undefined): number | undefined {
  const ms = iso === undefined ? Number.NaN : Date.parse(iso);
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

/**
 * What holds each locked cluster, for the scrape-time gauges: the lock names one operation per
 * cluster, and the operation says since when and whether it waits for an approver. A lock whose
 * operation is gone from the store has no time to show and is left out.
 */
export async function readClusterHolds(
  clusters: string[],
  holder: (cluster: string) => Promise<string | undefined>,
  get: (id: string) => Promise<Operation | undefined>,
): Promise<ClusterHold[]> {
  const holds = await Promise.all(
    clusters.map(async (cluster): Promise<ClusterHold | undefined> => {
      const opId = await holder(cluster);
      const op = opId === undefined ? undefined : await get(opId);
      // A plan-first operation takes the lock at Start; one that starts with its request, at its preflight.
      const lockedSince = unixSeconds(op?.startedAt ?? op?.createdAt);
      if (op === undefined || lockedSince === undefined) return undefined;
      const pending =
        op.state === 'awaiting-approval' ? op.approvals.filter((a) => a.state === 'pending').map((a) => unixSeconds(a.requestedAt)) : [];
      const requested = pending.filter((t): t is number => t !== undefined);
      return {
        cluster,
        kind: op.kind,
        state: op.state,
        lockedSince,
        ...(requested.length > 0 ? { approvalRequestedAt: Math.min(...requested) } : {}),
      };
    }),
  );
  return holds.filter((h): h is ClusterHold => h !== undefined);
}

/** Operations waiting for an approver, by cluster, every cluster of the inventory named (0 when free). */
export function waitingApprovalCounts(clusters: string[], holds: ClusterHold[]): Record<string, number> {
  return Object.fromEntries(
    clusters.map((cluster) => [cluster, holds.some((h) => h.cluster === cluster && h.state === 'awaiting-approval') ? 1 : 0]),
  );
}

/** Operations waiting for an approver, by cluster, for the scrape-time gauge: each cluster's lock names its one operation. */
export async function waitingApprovalsByCluster(
  clusters: string[],
  holder: (cluster: string) => Promise<string | undefined>,
  get: (id: string) => Promise<Operation | undefined>,
): Promise<Record<string, number>> {
  return waitingApprovalCounts(clusters, await readClusterHolds(clusters, holder, get));
}
