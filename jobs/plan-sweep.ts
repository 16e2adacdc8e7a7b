import type { Logger } from '../src/log/logger.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';
import { FINISHED } from '../src/ops/state-machine.ts';
import { sweepPlanSpace } from '../src/tofu/plan-space.ts';

export interface PlanSweepDeps {
  store: Pick<OperationStore, 'get'>;
  /** The plan space every replica mounts (`PLAN_DIR`). */
  planDir: string;
  logger: Logger;
  now: () => Date;
}

/**
 * How long a plan outlives its operation's end: the operation's `ended` job attaches the plan's text
 * to the maintenance record, then deletes it; a sweep in between would leave the record without it.
 */
export const ENDED_PLAN_GRACE_MS = 15 * 60_000;

/**
 * Deletes the kept plans of operations that ended (their `ended` job was lost to a crash) or that
 * Redis no longer knows: each plan carries the Terraform state's secrets, so none outlives its
 * operation by more than a short grace. A plan whose operation is still live (planning, waiting,
 * running, stopped) stays.
 */
export async function sweepEndedPlans(deps: PlanSweepDeps): Promise<string[]> {
  const removed = await sweepPlanSpace(deps.planDir, async (opId) => {
    const op = await deps.store.get(opId).catch(() => 'unreadable' as const);
    // Redis that cannot answer says nothing about the operation: its plan stays until a sweep can tell.
    if (op === 'unreadable') return true;
    if (op === undefined) return false;
    if (!FINISHED.includes(op.state)) return true;
    const ended = Date.parse(op.endedAt ?? '');
    return Number.isFinite(ended) && deps.now().getTime() - ended < ENDED_PLAN_GRACE_MS;
  });
  if (removed.length > 0) deps.logger.info({ removed }, 'kept plans of ended or unknown operations deleted');
  return removed;
}
