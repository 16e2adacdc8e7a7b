import type { SupportTable } from '../talos/compatibility.ts';
import { checkTalosUpgradePath, withV } from './versions.ts';

/**
 * What the Talos versions the nodes run allow for an upgrade to a target: one version (a fresh
 * upgrade or a re-install), or exactly the target and one version the rules let it start from
 * (the rest of an upgrade that stopped half-way, then was cancelled), or nothing.
 */
export type VersionMix =
  | { kind: 'none' }
  | { kind: 'one'; version: string }
  | { kind: 'continuation'; from: string; done: string[]; remaining: string[] }
  | { kind: 'refused'; reason: string };

/** `v1.12.11 on 10.0.30.11, 10.0.30.12; v1.11.6 on 10.0.30.13`, in the order the nodes were listed. */
export function versionMixText(byVersion: Map<string, string[]>): string {
  return [...byVersion].map(([version, nodes]) => `${version} on ${nodes.join(', ')}`).join('; ');
}

/**
 * Judges the versions the reachable nodes run (`byVersion`: version → nodes) for an upgrade to
 * `target`. Two versions continue only when one is the target and the path from the other to
 * the target is one the version rules allow (`checkTalosUpgradePath`); any other mix is
 * refused, naming each version and its nodes.
 *
 * @param factoryVersions the Image Factory's `GET /versions` list, as the path check takes it
 * @param support the support table, with the inventory's rows; default the built-in one
 */
export function judgeVersionMix(
  byVersion: Map<string, string[]>,
  target: string,
  factoryVersions: string[],
  support?: SupportTable,
): VersionMix {
  const versions = [...byVersion.keys()];
  if (versions.length === 0) return { kind: 'none' };
  if (versions.length === 1) return { kind: 'one', version: versions[0]! };
  const mix = versionMixText(byVersion);
  const onTarget = versions.find((v) => withV(v) === withV(target));
  if (versions.length > 2 || onTarget === undefined) {
    return {
      kind: 'refused',
      reason:
        `the cluster runs mixed Talos versions (${mix}): an upgrade to ${target} continues only when every node runs either ${target} or the one version it upgrades from; ` +
        'finish or roll back the earlier upgrade first, so every node runs one version',
    };
  }
  const from = versions.find((v) => v !== onTarget)!;
  const path = checkTalosUpgradePath(from, target, factoryVersions, { support });
  if (!path.ok || path.kind === 'reinstall') {
    const why = path.ok ? 'it is the same version' : path.reason;
    return {
      kind: 'refused',
      reason:
        `the cluster runs mixed Talos versions (${mix}): ${from} is not a version an upgrade to ${target} may start from (${why}), ` +
        `so the nodes on ${from} cannot continue to ${target}; finish or roll back the earlier upgrade first, so every node runs one version`,
    };
  }
  return { kind: 'continuation', from, done: byVersion.get(onTarget)!, remaining: byVersion.get(from)! };
}
