import { z } from 'zod';
import { FollowUpOf, type Operation } from '../../../src/ops/operation.ts';
import { PlanData } from '../shared/plan-data.ts';

/** A Terraform change's own fields on its operation (`op.data`), beside the reviewed plan every apply keeps. */
export const TerraformApplyData = PlanData.extend({
  /** The completed upgrades whose declared version this change brings in line: it is their Terraform follow-up. */
  followUpOf: FollowUpOf.optional(),
  /** The operation that planned this change again after its refusal or failure. */
  replannedAs: z.string().optional(),
});
export type TerraformApplyData = z.infer<typeof TerraformApplyData>;

/** A Terraform change's fields, read and checked from the stored operation. */
export function terraformData(op: Pick<Operation, 'data'>): TerraformApplyData {
  return TerraformApplyData.parse(op.data ?? {});
}
