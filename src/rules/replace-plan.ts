import type { PlanReview, PlannedChange } from '../tofu/parse-plan.ts';

/** What a node replacement's plan may hold: the replacement of one VM and what its own key replaces with it. */
export interface ReplacePlanJudgement {
  /** Why the plan must not be applied; empty when it is exactly the replacement. */
  refusals: string[];
  /** What the reviewer should know and the apply does not stop for (the resources replaced with the VM, outputs that move). */
  notes: string[];
  /** The addresses whose replacement the apply accepts: the VM and what is replaced with it. */
  allowed: string[];
}

/** A change the replacement brings with it: same `for_each` key, replaced because the VM's replacement triggers it. */
function followsTheVm(change: PlannedChange, hostname: string): boolean {
  return change.key === hostname && change.action === 'replace' && change.reason === 'replace_by_triggers';
}

function describe(change: PlannedChange): string {
  return `${change.address} (${change.action}${change.reason ? `, ${change.reason}` : ''})`;
}

/**
 * A `tofu plan -replace=<vm>` judged for a node replacement: it must replace exactly that VM (delete
 * then create, never a forget that leaves the old machine running), and nothing else may change but
 * the resources of the same node replaced by triggers (its machine configuration apply). Another
 * VM, the cluster secrets, an update elsewhere: the plan is refused with the list.
 */
export function judgeReplacePlan(review: PlanReview, vmAddress: string, hostname: string): ReplacePlanJudgement {
  const refusals: string[] = [];
  const notes: string[] = [];
  const vm = review.changes.find((c) => c.address === vmAddress);
  if (vm === undefined) refusals.push(`the plan does not replace ${vmAddress}: it has no change for it`);
  else if (vm.action !== 'replace')
    refusals.push(`the plan does not replace ${vmAddress} but ${describe(vm)}; only a delete-then-create replacement is applied`);
  const others = review.changes.filter((c) => c.address !== vmAddress);
  const following = others.filter((c) => followsTheVm(c, hostname));
  const foreign = others.filter((c) => !followsTheVm(c, hostname));
  if (foreign.length > 0)
    refusals.push(
      `the plan changes more than ${hostname}'s VM, so it is not applied: ${foreign.slice(0, 10).map(describe).join('; ')}${foreign.length > 10 ? `; and ${foreign.length - 10} more` : ''}. Apply those changes on their own with /talos plan first, then replace the node`,
    );
  if (following.length > 0) notes.push(`replaced with the VM (same node, by triggers): ${following.map((c) => c.address).join(', ')}`);
  if (review.talosVersion !== undefined)
    notes.push(
      `the output talos_version moves ${review.talosVersion.from ?? '(new)'} → ${review.talosVersion.to} (outputs only; nothing is applied for it)`,
    );
  return { refusals, notes, allowed: vm?.action === 'replace' ? [vmAddress, ...following.map((c) => c.address)] : [] };
}
