import type { Step } from '../../../src/ops/operation.ts';
import { probeSignal } from '../../engine/walk.ts';
import type { PostedOperation, WalkContext } from '../../engine/playbook.ts';
import { deriveInstallerImages } from './installer-images.ts';
import { recordedClasses } from './preflight.ts';

/** The installer image the rules give the step's node now, or why none can be chosen. */
export interface DerivedImage {
  image: string | undefined;
  refusals: string[];
}

/** The step node's installer image as the rules derive it now: Terraform's outputs, what the nodes run, and the bot's class record. */
export async function deriveStepImage(ctx: WalkContext, op: PostedOperation, step: Step): Promise<DerivedImage> {
  const node = step.node!;
  const recorded = await recordedClasses(ctx.deps, ctx.cluster);
  const images = await deriveInstallerImages(
    ctx.session.outputs,
    ctx.cluster,
    ctx.talosctl,
    [node],
    op.target.version!,
    { recorded: recorded.byNode, runningVersion: op.target.fromVersion },
    probeSignal(ctx),
    ctx.deps.factory.registry,
  );
  return { image: images.byNode.get(node)?.image, refusals: images.refusals };
}

/**
 * Why the step's stored image is not the one the rules derive now, empty when it is. With
 * `undecided: 'pass'`, a derivation that names no image (the node reboots and cannot be read) is
 * no reason: used where only a watch may follow, as every request checks again before it is sent.
 */
export async function storedImageProblems(
  ctx: WalkContext,
  op: PostedOperation,
  step: Step,
  undecided: 'refuse' | 'pass' = 'refuse',
): Promise<string[]> {
  const derived = await deriveStepImage(ctx, op, step);
  if (derived.image === undefined)
    return undecided === 'pass' ? [] : [`stored installer image ${step.image ?? 'none'}`, ...derived.refusals];
  return derived.image === step.image
    ? []
    : [`stored installer image ${step.image ?? 'none'}`, `the rules derive ${derived.image} for ${step.node!} now; plan the upgrade again`];
}
