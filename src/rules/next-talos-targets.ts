import { checkTalosUpgradePath } from './versions.ts';
import type { SupportTable } from '../talos/compatibility.ts';

/** The releases an upgrade form offers from what the cluster runs: those the rules allow, and the others with the rule's reason. */
export interface NextTalosTargets {
  /** Allowed targets, the recommended one (the newest allowed) first. */
  allowed: string[];
  /** Releases the rules refuse from the running version, each with the reason the preflight would give. */
  refused: { version: string; reason: string }[];
}

/**
 * Sorts the offered releases by the runbook's rules against the one version the cluster runs; the
 * preflight applies the same `checkTalosUpgradePath`, so the form never offers what it would refuse.
 * A same-version release is a re-install only the preflight can judge (it needs the nodes' images): left out.
 */
export function nextTalosTargets(
  running: string,
  offered: readonly string[],
  factoryVersions: string[],
  support?: SupportTable,
): NextTalosTargets {
  const allowed: string[] = [];
  const refused: { version: string; reason: string }[] = [];
  for (const version of offered) {
    const path = checkTalosUpgradePath(running, version, factoryVersions, support === undefined ? {} : { support });
    if (path.ok) allowed.push(version);
    else if (path.code !== 'same-version') refused.push({ version, reason: path.reason });
  }
  return { allowed, refused };
}
