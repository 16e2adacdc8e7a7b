import type { OperationStore } from '../../../src/ops/operation-store.ts';
import type { FollowUpOf, Operation } from '../../../src/ops/operation.ts';
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

/**
 * Records on each upgrade the follow-up plan (`planned`) and then its apply (`applied`), through the
 * store's compare-and-set. An applied follow-up is never replaced by a later plan: it is the one that
 * brought Terraform in line. The same state again from the same operation changes nothing.
 */
export async function linkFollowUp(
  store: Pick<OperationStore, 'update'>,
  change: Pick<Operation, 'id'>,
  followUpOf: FollowUpOf,
  link: { state: 'planned' | 'applied'; commit: string | undefined; at: string },
): Promise<void> {
  for (const upgrade of followUpOf) {
    await store.update(upgrade.op, (o) => {
      const known = o.terraformFollowUp;
      if (known?.state === 'applied') return undefined;
      if (known?.op === change.id && known.state === link.state) return undefined;
      return {
        ...o,
        terraformFollowUp: { op: change.id, state: link.state, ...(link.commit === undefined ? {} : { commit: link.commit }), at: link.at },
      };
    });
  }
}
