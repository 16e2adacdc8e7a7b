import type { PlanReview, PlannedChange } from '../tofu/parse-plan.ts';

/** What a node replacement's plan may hold: the replacement of one VM and the configuration apply that configures the new one. */
export interface ReplacePlanJudgement {
  /** Why the plan must not be applied; empty when it is exactly the replacement. */
  refusals: string[];
  /** What the reviewer should know and the apply does not stop for (the configuration apply, the destroy's shutdown, outputs that move). */
  notes: string[];
  /** The addresses whose replacement the apply accepts: the VM and its configuration apply. */
  allowed: string[];
  /**
   * The VM resource does not set `stop_on_destroy`: the provider shuts the guest down gracefully before
   * the destroy and may wait up to its shutdown timeout (bpg/terraform-provider-proxmox
   * docs/resources/virtual_environment_vm.md: `stop_on_destroy` default false, `timeout_shutdown_vm` 1800 s).
   */
  gracefulShutdown: boolean;
}

/** The provider's default `timeout_shutdown_vm`: how long a graceful destroy may wait for the guest, in ms. */
export const VM_SHUTDOWN_TIMEOUT_MS = 1800 * 1000;

const CONFIG_APPLY = 'talos_machine_configuration_apply';

/** Where the replacement's configuration apply is found, and whether the bot asked for it with `-replace`. */
export interface ConfigApplyPlan {
  /** Its address in the Terraform state (`tofu state list`), when the state holds one keyed by the hostname. */
  address?: string;
  /** Named with `-replace` beside the VM (the inventory's `replaceConfigApply`). */
  requested: boolean;
}

/** The node's configuration apply, created, or replaced with the VM by its trigger or by the bot's request. */
function configuresTheVm(change: PlannedChange, hostname: string, config: ConfigApplyPlan): boolean {
  if (change.type !== CONFIG_APPLY || (change.address !== config.address && change.key !== hostname)) return false;
  if (change.action === 'create') return true;
  if (change.action !== 'replace') return false;
  return change.reason === 'replace_by_triggers' || (config.requested && change.reason === 'replace_by_request');
}

function describe(change: PlannedChange): string {
  return `${change.address} (${change.action}${change.reason ? `, ${change.reason}` : ''})`;
}

/** The two ways to have a recreated VM configured, for the refusal. */
export function configApplyFixes(hostname: string, address: string | undefined): string {
  const named = address ?? `the talos_machine_configuration_apply keyed "${hostname}"`;
  return (
    `Either tie it to the VM in the estate's Terraform (\`lifecycle { replace_triggered_by = [proxmox_virtual_environment_vm.talos[each.key]] }\` ` +
    `on the node's talos_machine_configuration_apply), commit and ask again; or set \`replaceConfigApply: true\` for this cluster in the bot's inventory, ` +
    `so the bot names ${named} with \`-replace\` beside the VM`
  );
}

/**
 * A `tofu plan -replace=<vm>` judged for a node replacement: it must replace exactly that VM (delete
 * then create, never a forget that leaves the old machine running) and create or replace that node's
 * `talos_machine_configuration_apply` (by `replace_triggered_by`, or by the bot's `-replace`), since
 * the provider applies a configuration only when that resource is created or changed: a new VM without
 * it stays in maintenance mode and never joins. Anything else that changes refuses the plan.
 */
export function judgeReplacePlan(
  review: PlanReview,
  vmAddress: string,
  hostname: string,
  config: ConfigApplyPlan = { requested: false },
): ReplacePlanJudgement {
  const refusals: string[] = [];
  const notes: string[] = [];
  const vm = review.changes.find((c) => c.address === vmAddress);
  if (vm === undefined) refusals.push(`the plan does not replace ${vmAddress}: it has no change for it`);
  else if (vm.action !== 'replace')
    refusals.push(`the plan does not replace ${vmAddress} but ${describe(vm)}; only a delete-then-create replacement is applied`);
  const others = review.changes.filter((c) => c.address !== vmAddress);
  const configuring = others.filter((c) => configuresTheVm(c, hostname, config));
  const foreign = others.filter((c) => !configuring.includes(c));
  if (vm?.action === 'replace' && configuring.length === 0)
    refusals.push(
      `nothing in the plan configures the new VM: ${config.address ?? `no talos_machine_configuration_apply keyed "${hostname}" is in the Terraform state, and none`} is created or replaced with it, so the new machine would stay in maintenance mode and never join, after its etcd member and Node are already gone. ${configApplyFixes(hostname, config.address)}`,
    );
  if (foreign.length > 0)
    refusals.push(
      `the plan changes more than ${hostname}'s VM and its configuration apply, so it is not applied: ${foreign.slice(0, 10).map(describe).join('; ')}${foreign.length > 10 ? `; and ${foreign.length - 10} more` : ''}. Apply those changes on their own with /talos plan first, then replace the node`,
    );
  if (configuring.length > 0)
    notes.push(
      `the new VM is configured by ${configuring.map((c) => `${c.address} (${c.action}${c.reason === 'replace_by_triggers' ? ', tied to the VM by replace_triggered_by' : c.reason === 'replace_by_request' ? ', named with -replace' : ''})`).join(', ')}`,
    );
  const gracefulShutdown = vm !== undefined && vm.stopOnDestroy !== true;
  if (gracefulShutdown)
    notes.push(
      `${vmAddress} does not set stop_on_destroy, so the Proxmox provider shuts the old guest down gracefully before destroying it and may wait up to its shutdown timeout (timeout_shutdown_vm, 30 min by default) when the machine does not answer; the apply is given that long`,
    );
  if (review.talosVersion !== undefined)
    notes.push(
      `the output talos_version moves ${review.talosVersion.from ?? '(new)'} → ${review.talosVersion.to} (outputs only; nothing is applied for it)`,
    );
  const allowed = vm?.action === 'replace' ? [vmAddress, ...configuring.filter((c) => c.action === 'replace').map((c) => c.address)] : [];
  return { refusals, notes, allowed, gracefulShutdown };
}
