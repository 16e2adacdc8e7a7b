import type { Logger } from '../src/log/logger.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';
import { FINISHED } from '../src/ops/state-machine.ts';
import { sweepPlanSpace } from '../src/tofu/plan-space.ts';

export interface PlanSweepDeps {
  store: Pick<OperationStore, 'get'>;
  /** The plan space every replica mounts (`PLAN_DIR`). */
  planDir: string;
  logger: Logger;
}

/**
 * Deletes the kept plans of operations that ended (their `ended` job was lost to a crash) or that
 * Redis no longer knows: each plan carries the Terraform state's secrets, so none outlives its
 * operation. A plan whose operation is still live (planning, waiting, running, stopped) stays.
 */
export async function sweepEndedPlans(deps: PlanSweepDeps): Promise<string[]> {
  const removed = await sweepPlanSpace(deps.planDir, async (opId) => {
    const op = await deps.store.get(opId).catch(() => 'unreadable' as const);
    // Redis that cannot answer says nothing about the operation: its plan stays until a sweep can tell.
    if (op === 'unreadable') return true;
    return op !== undefined && !FINISHED.includes(op.state);
  });
  if (removed.length > 0) deps.logger.info({ removed }, 'kept plans of ended or unknown operations deleted');
  return removed;
}
