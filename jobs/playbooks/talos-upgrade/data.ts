import { z } from 'zod';
import type { Operation } from '../../../src/ops/operation.ts';
import { UpgradeContinuation } from '../../../src/ops/upgrade-continuation.ts';

/** A Talos upgrade's own fields on its operation (`op.data`). */
export const TalosUpgradeData = z.object({
  /** Set when the upgrade continues an earlier one to the same target: the nodes already on it, which get no step. */
  continuation: UpgradeContinuation.optional(),
  /** The installer image the plan gave each node class it upgrades: a production upgrade compares it with its staging rehearsal's. */
  classImages: z.object({ default: z.string().optional(), longhorn: z.string().optional() }).optional(),
});
export type TalosUpgradeData = z.infer<typeof TalosUpgradeData>;

/** A Talos upgrade's fields, read and checked from the stored operation. */
export function talosUpgradeData(op: Pick<Operation, 'data'>): TalosUpgradeData {
  return TalosUpgradeData.parse(op.data ?? {});
}
