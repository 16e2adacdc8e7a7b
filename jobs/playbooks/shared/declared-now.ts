import type { ClusterSession } from '../../../src/cluster/cluster-session.ts';
import { observeRunningVersions } from '../../../src/cluster/running-versions.ts';
import { declaredPlanRules } from '../../../src/rules/declared-versions.ts';
import { judgeDeclared, type VersionJudgement } from '../../../src/health/rules/declared-judgement.ts';
import type { DeclaredVersions } from '../../../src/tofu/declared-versions.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { planData } from './plan-data.ts';

/** How the versions a plan declares compare with what every node of the job's (observed) cluster runs now. */
export async function judgeDeclaredNow(
  session: ClusterSession,
  declared: DeclaredVersions,
  signal: AbortSignal,
): Promise<VersionJudgement[]> {
  const talosctl = await session.talosctl();
  return judgeDeclared(declared, await observeRunningVersions(talosctl, session.kube, session.cluster, signal));
}

/**
 * At the Apply click: "apply only after every node runs the declared version", asked of the cluster again,
 * since nodes may have moved between the plan and the click. The reasons the Apply is refused; none for a
 * plan whose declared versions were not read (its plan already said which rule is off).
 */
export async function declaredAtApply(session: ClusterSession, op: Operation, signal: AbortSignal): Promise<string[]> {
  const terraform = planData(op).terraform;
  if (terraform?.declared === undefined) return [];
  return declaredPlanRules(await judgeDeclaredNow(session, terraform.declared, signal), terraform.declaredMoves ?? {}).refusals;
}
