import type { TerraformPlan } from '../../../src/ops/operation.ts';
import { declaredMoves, versionsOf } from '../../../src/rules/declared-versions.ts';
import { declaredInState } from '../../../src/tofu/declared-versions.ts';
import type { PlanReview } from '../../../src/tofu/parse-plan.ts';
import type { WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';
import { isoRefusal, planIso } from '../shared/boot-iso.ts';

/**
 * The boot ISO the new VM of a reviewed replace plan boots: the same download and full sha256 a Terraform
 * change's Apply shows ({@link planIso}), so the approver of the apply compares it with the uploaded file.
 * A plan whose ISO has no sha256 is refused: nobody could check the file the new VM boots.
 */
export async function replaceIso(
  ctx: WalkContext,
  review: PlanReview,
): Promise<{ ok: true; iso: TerraformPlan['iso'] } | { ok: false; reason: string }> {
  const talosVersion = versionsOf(review.declared).talos;
  const state = versionsOf(await declaredInState(ctx.session.outputs, probeSignal(ctx)));
  const moves = talosVersion === undefined ? {} : declaredMoves({ talos: talosVersion }, state);
  const iso = await planIso(
    {
      factory: ctx.deps.factory,
      outputs: ctx.session.outputs,
      cluster: ctx.cluster,
      review,
      ...(talosVersion === undefined ? {} : { talosVersion }),
      talosMoves: talosVersion !== undefined && moves.talos !== false,
    },
    ctx.signal,
  );
  const refusal = isoRefusal(iso);
  return refusal === undefined ? { ok: true, iso } : { ok: false, reason: refusal };
}
