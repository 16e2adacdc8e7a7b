import type { NodeClassName } from './installer-image.ts';

/** The installer image an upgrade gave each node class it upgraded (`default`, `longhorn`). */
export type ClassImages = Partial<Record<NodeClassName, string>>;

const LABEL: Record<NodeClassName, string> = { default: 'default', longhorn: 'Longhorn' };

export interface StagingTargetVerdict {
  /** Whether the staging upgrade rehearsed the exact target: the same image for every class both clusters have, and at least one such class. */
  counts: boolean;
  /** Why it does not count, for the plan; undefined when it counts. */
  why?: string;
  /** The production classes staging has none of, so it rehearsed nothing of them. */
  unrehearsed: NodeClassName[];
}

/**
 * The runbook's "exact target in staging": the same version and the same installer image. Staging and
 * production may be built from different schematics (production has Longhorn nodes), so each class is
 * compared with the same class in staging, where staging has it; a class staging lacks is named, not
 * held against the rehearsal. A staging upgrade that recorded no image per class proves nothing of the image.
 */
export function judgeStagingTarget(production: ClassImages, staging: ClassImages | undefined): StagingTargetVerdict {
  const classes = (Object.keys(production) as NodeClassName[]).sort();
  if (staging === undefined)
    return { counts: false, why: 'it recorded no installer image per node class, so it proves nothing of the image', unrehearsed: [] };
  const shared = classes.filter((c) => staging[c] !== undefined);
  const unrehearsed = classes.filter((c) => staging[c] === undefined);
  const differ = shared.filter((c) => staging[c] !== production[c]);
  if (differ.length > 0)
    return {
      counts: false,
      why: differ.map((c) => `its ${LABEL[c]} nodes installed ${staging[c]}, production's get ${production[c]}`).join('; '),
      unrehearsed,
    };
  if (shared.length === 0) return { counts: false, why: 'it upgraded none of the node classes production has', unrehearsed };
  return { counts: true, unrehearsed };
}

/** The plan's words for the classes staging did not rehearse, or undefined when it rehearsed every one. */
export function unrehearsedNote(stagingOp: string, unrehearsed: NodeClassName[]): string | undefined {
  if (unrehearsed.length === 0) return undefined;
  const names = unrehearsed.map((c) => LABEL[c]).join(' and ');
  return `The staging rehearsal ${stagingOp} had no ${names} nodes: the ${names} installer image of this upgrade was not rehearsed in staging.`;
}
