import { access } from 'node:fs/promises';
import { errorText } from '../../../src/chat/error-text.ts';
import { terraformWorkDir } from '../../../src/config/terraform-repo.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { reviewPlan } from '../../../src/tofu/parse-plan.ts';
import { showPlanJson } from '../../../src/tofu/show-plan.ts';
import { fileSha256 } from '../../../src/tofu/run-plan.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';
import { declaredAtApply } from './declared-now.ts';
import { planData } from './plan-data.ts';
import { repoOf } from './plan-tree.ts';

export const DEFAULT_AGAIN = 'Run `/talos plan` again for a fresh plan.';

/** What an apply of a reviewed plan accepts beyond a routine change, and what its refusals tell the operator to do. */
export interface ReviewedApply {
  /** Addresses whose `stop` danger was reviewed as the point of the plan (a node replacement's VM); any other still stops. */
  allowedStops?: readonly string[];
  /** What to do for a fresh plan, ending every refusal; default: run `/talos plan` again. */
  again?: string;
  /** Upper bound of the apply in ms; default the step timeout. A VM destroy that waits for a guest shutdown needs longer. */
  timeoutMs?: number;
}

/**
 * What Redis says was reviewed is checked against what is on disk and in git before anything runs:
 * the plan file with the reviewed hash, the tree at the reviewed commit with nothing uncommitted,
 * and the plan, read again, still free of anything the runbook forbids.
 */
export async function checkReviewed(ctx: WalkContext, op: Operation, file: string, reviewed: ReviewedApply = {}): Promise<void> {
  const NEW_PLAN = reviewed.again ?? DEFAULT_AGAIN;
  const { deps, cluster } = ctx;
  const tf = planData(op).terraform;
  if (tf?.planSha256 === undefined || tf.commit === undefined)
    throw new StepFailure(`the operation holds no reviewed plan; nothing was applied. ${NEW_PLAN}`);
  const present = await access(file).then(
    () => true,
    () => false,
  );
  if (!present)
    throw new StepFailure(
      `the reviewed plan file is gone from the plan space (deleted when its operation ended, or PLAN_DIR is not a volume every replica mounts); nothing was applied. ${NEW_PLAN}`,
    );
  const sha = await fileSha256(file);
  if (sha !== tf.planSha256)
    throw new StepFailure(
      `the plan file on disk is not the reviewed one (sha256 ${sha.slice(0, 12)}…, reviewed ${tf.planSha256.slice(0, 12)}…); nothing was applied. ${NEW_PLAN}`,
    );
  // With a terraformRepo, the bot's copy goes back to the planned commit, never fetching: a ref moved since the plan is not applied.
  if (cluster.terraformRepo !== undefined)
    await repoOf(deps, cluster)
      .checkout(cluster, tf.commit, ctx.signal)
      .catch((error: unknown) => {
        throw new StepFailure(`${errorText(error)}; nothing was applied. ${NEW_PLAN}`);
      });
  const tree = await deps.git.read(terraformWorkDir(cluster), probeSignal(ctx));
  if (tree.commit !== tf.commit)
    throw new StepFailure(
      `the Terraform directory moved from the reviewed commit ${tf.commit.slice(0, 12)} to ${tree.commit?.slice(0, 12) ?? 'no commit'}; nothing was applied. ${NEW_PLAN}`,
    );
  if (tree.ignoredInputs !== undefined && tree.ignoredInputs.length > 0)
    throw new StepFailure(
      `the Terraform directory holds files git ignores that tofu reads (${tree.ignoredInputs.slice(0, 5).join(', ')}); nothing was applied. ${NEW_PLAN}`,
    );
  if (tree.uncommitted === undefined || tree.uncommitted.length > 0) {
    throw new StepFailure(
      `the Terraform working tree ${tree.uncommitted === undefined ? 'could not be checked' : `has uncommitted changes (${tree.uncommitted.slice(0, 5).join(', ')})`}; nothing was applied. ${NEW_PLAN}`,
    );
  }
  const allowed = reviewed.allowedStops ?? [];
  const stops = reviewPlan(await showPlanJson(deps.tofu, terraformWorkDir(cluster), file, probeSignal(ctx))).dangers.filter(
    (d) => d.level === 'stop' && !allowed.includes(d.address),
  );
  if (stops.length > 0)
    throw new StepFailure(`the plan file ${stops.map((d) => `${d.meaning} (${d.address})`).join('; ')}; nothing was applied. ${NEW_PLAN}`);
  // Asked at the click, and again here: a window or an approval may have held the step while nodes moved.
  const versions = await declaredAtApply(ctx.session, op, probeSignal(ctx));
  if (versions.length > 0) throw new StepFailure(`${versions.join('; ')}; nothing was applied. ${NEW_PLAN}`);
}
