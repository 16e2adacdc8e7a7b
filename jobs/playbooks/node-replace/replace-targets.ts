import type { ClusterConfig } from '../../../src/config/inventory.ts';
import { judgeReplacePlan, type ReplacePlanJudgement } from '../../../src/rules/replace-plan.ts';
import { planRefusals } from '../../../src/rules/terraform-change.ts';
import { runPlan, type PlanOutcome } from '../../../src/tofu/run-plan.ts';
import { configApplyOf, vmAddressOf } from '../../../src/tofu/state-address.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';
import type { WorkingTree } from '../../../src/tofu/working-tree.ts';

/** What Terraform replaces for a node, read from its state (`tofu state list`) each time, never from stored data. */
export interface ReplaceTargets {
  /** The VM keyed by the hostname. */
  vm: string;
  /** The node's `talos_machine_configuration_apply`, when the state holds one keyed by the hostname. */
  configApply?: string;
  /** The `-replace` addresses: the VM, and the configuration apply when the inventory asks for it (`replaceConfigApply`). */
  replace: string[];
}

/** The VM and configuration apply of `hostname` in the Terraform state of `dir`, or why they cannot be named. */
export async function replaceTargets(
  deps: PlaybookDeps,
  cluster: ClusterConfig,
  dir: string,
  hostname: string,
  signal?: AbortSignal,
): Promise<{ ok: true; targets: ReplaceTargets } | { ok: false; reason: string }> {
  const state = await deps.tofu.run(dir, ['state', 'list'], { signal, timeoutMs: deps.timeouts.stepMs });
  const vm = vmAddressOf(state.stdout, hostname);
  if (!vm.ok) return { ok: false, reason: `${vm.reason}; nothing can be replaced` };
  const configApply = configApplyOf(state.stdout, hostname);
  const named = cluster.replaceConfigApply === true && configApply !== undefined ? [configApply] : [];
  return { ok: true, targets: { vm: vm.address, ...(configApply ? { configApply } : {}), replace: [vm.address, ...named] } };
}

/** A replace plan and how it was judged. */
export interface ReplacePlanOutcome {
  outcome: PlanOutcome;
  judged?: ReplacePlanJudgement;
  refusals: string[];
}

/**
 * `tofu plan -replace=<vm> [-replace=<configuration apply>]`, judged for the replacement: read-only
 * in the preflight (before anything changes), kept in `saveTo` at the plan step for the apply.
 */
export async function planReplacement(
  deps: PlaybookDeps,
  dir: string,
  tree: WorkingTree,
  hostname: string,
  targets: ReplaceTargets,
  options: { signal?: AbortSignal; saveTo?: string },
): Promise<ReplacePlanOutcome> {
  const outcome = await runPlan(deps.tofu, dir, {
    signal: options.signal,
    planTimeoutMs: deps.timeouts.stepMs,
    replace: targets.replace,
    ...(options.saveTo === undefined ? {} : { saveTo: options.saveTo }),
  });
  const refusals = planRefusals(outcome, tree);
  const judged =
    outcome.plan.status === 'planned'
      ? judgeReplacePlan(outcome.plan.review, targets.vm, hostname, {
          ...(targets.configApply ? { address: targets.configApply } : {}),
          requested: targets.replace.length > 1,
        })
      : undefined;
  refusals.push(...(judged?.refusals ?? []));
  return { outcome, ...(judged ? { judged } : {}), refusals };
}
