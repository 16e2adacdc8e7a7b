import type { FollowUpOf } from '../../../src/ops/operation.ts';
import type { ChangeFacts } from '../../../src/rules/terraform-change.ts';
import type { VersionKind } from '../../../src/tofu/declared-versions.ts';

/**
 * The upgrades this plan is the Terraform follow-up of: a completed upgrade to the version the plan
 * declares, for a kind whose declared version the plan moves (a plan that leaves it alone follows nothing up).
 */
export function followUpsOf(upgrades: ChangeFacts['upgrades'], moves: Partial<Record<VersionKind, boolean>>): FollowUpOf {
  return (['talos', 'kubernetes'] as const).flatMap((kind) => {
    const upgrade = upgrades?.[kind];
    return upgrade !== undefined && moves[kind] === true ? [{ op: upgrade.op, kind, version: upgrade.version }] : [];
  });
}
