import { z } from 'zod';
import { TerraformPlan, type Operation } from '../../../src/ops/operation.ts';

/** The reviewed Terraform plan an operation that applies one keeps in its data (`op.data.terraform`). */
export const PlanData = z.object({
  /** The reviewed plan, what it changes, and how it relates to earlier operations. */
  terraform: TerraformPlan.optional(),
});
export type PlanData = z.infer<typeof PlanData>;

/** The reviewed plan's fields, read and checked from the stored operation, whichever playbook planned it. */
export function planData(op: Pick<Operation, 'data'>): PlanData {
  return PlanData.parse(op.data ?? {});
}
