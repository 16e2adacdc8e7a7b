import { findStagingOperation } from '../../../src/ops/rehearsal.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { judgeStagingTarget, unrehearsedNote, type ClassImages } from '../../../src/rules/staging-target.ts';
import type { PreflightDeps } from '../../engine/playbook.ts';
import { talosUpgradeData } from './data.ts';

const classImagesOf = (op: Operation): ClassImages | undefined => {
  const parsed = talosUpgradeData(op).classImages;
  return parsed === undefined || Object.keys(parsed).length === 0 ? undefined : parsed;
};

/**
 * The runbook's "exact target in staging" for a production Talos upgrade: a completed staging upgrade
 * to the same version whose installer image matches per node class. The plan names the classes staging
 * did not rehearse, and why a staging upgrade to the same version does not count.
 */
export async function talosStagingRehearsal(
  deps: PreflightDeps,
  target: string,
  production: ClassImages,
  notes: string[],
): Promise<NonNullable<Operation['rehearsal']>> {
  const found = await findStagingOperation(
    deps,
    'talos-upgrade',
    (o) => o.target.version === target && judgeStagingTarget(production, classImagesOf(o)).counts,
  );
  if (found.stagingOp !== undefined) {
    const op = await deps.store.get(found.stagingOp);
    const note = op === undefined ? undefined : unrehearsedNote(op.id, judgeStagingTarget(production, classImagesOf(op)).unrehearsed);
    if (note !== undefined) notes.push(note);
    return { ...(found.stagingOp ? { stagingOp: found.stagingOp } : {}), ...(found.stagingLink ? { stagingLink: found.stagingLink } : {}) };
  }
  const sameVersion = await findStagingOperation(deps, 'talos-upgrade', (o) => o.target.version === target);
  if (sameVersion.stagingOp !== undefined) {
    const op = await deps.store.get(sameVersion.stagingOp);
    const why = op === undefined ? 'it is no longer in the records' : judgeStagingTarget(production, classImagesOf(op)).why;
    notes.push(
      `The staging upgrade ${sameVersion.stagingOp} to ${target} is not this exact target, so it does not count as the rehearsal: ${why ?? 'its images differ'}.`,
    );
  }
  return {};
}
