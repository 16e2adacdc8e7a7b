import semver from 'semver';
import { minorOf, supportFor, talosSupportsKubernetes, unknownMinorRefusal, type SupportTable } from '../talos/compatibility.ts';

/** Longer input is refused before it is even matched. */
const MAX_INPUT = 32;

/** ASCII digits only: `\d` would accept nothing else either, but spelling it out keeps it obvious. */
const NUMBER = '(0|[1-9][0-9]*)';
const RELEASE = new RegExp(`^(v?)${NUMBER}\\.${NUMBER}\\.${NUMBER}$`);
const PRERELEASE = new RegExp(`^(v?)${NUMBER}\\.${NUMBER}\\.${NUMBER}-(alpha|beta|rc)\\.${NUMBER}$`);

/** An operator's version input, accepted or refused with the reason. */
/** A version with its leading `v`, as Talos and Terraform outputs may write it either way. */
export const withV = (version: string): string => (version.startsWith('v') ? version : `v${version}`);

export type VersionInput<T> = ({ ok: true } & T) | { ok: false; reason: string };

/** How strict a version input is. */
export interface VersionInputOptions {
  /** Accept `-alpha.N`, `-beta.N` and `-rc.N` suffixes. Default false. */
  allowPrerelease?: boolean;
}

/** Shows the refused input safely: quoted, escapes visible, shortened. */
function shown(input: unknown): string {
  if (typeof input !== 'string') return `a ${typeof input}`;
  const text = input.length > MAX_INPUT ? `${input.slice(0, MAX_INPUT)}…` : input;
  return JSON.stringify(text);
}

function matchVersion(
  input: unknown,
  what: string,
  example: string,
  options: VersionInputOptions,
): VersionInput<{ core: string; hadLeadingV: boolean }> {
  const expected = `expected a ${what} version like ${example} or v${example}`;
  if (typeof input !== 'string' || input === '') return { ok: false, reason: `${shown(input)} is not a ${what} version: ${expected}` };
  if (input.length > MAX_INPUT) return { ok: false, reason: `${shown(input)} is too long for a ${what} version: ${expected}` };
  const release = RELEASE.exec(input);
  if (release !== null) {
    return { ok: true, core: `${release[2]}.${release[3]}.${release[4]}`, hadLeadingV: release[1] === 'v' };
  }
  const pre = PRERELEASE.exec(input);
  if (pre !== null) {
    if (options.allowPrerelease === true) {
      return { ok: true, core: `${pre[2]}.${pre[3]}.${pre[4]}-${pre[5]}.${pre[6]}`, hadLeadingV: pre[1] === 'v' };
    }
    return { ok: false, reason: `${shown(input)} is a pre-release: ${expected}, a released version` };
  }
  return { ok: false, reason: `${shown(input)} is not a ${what} version: ${expected}` };
}

/**
 * Validates a Talos version typed by an operator: `1.12.11` or `v1.12.11`, ASCII digits, nothing
 * else (no whitespace, look-alike characters, shell syntax, or pre-release unless allowed).
 * Returns the canonical `v1.12.11` form talosctl and the Image Factory use.
 */
export function parseTalosVersionInput(input: unknown, options: VersionInputOptions = {}): VersionInput<{ version: string }> {
  const match = matchVersion(input, 'Talos', '1.12.11', options);
  return match.ok ? { ok: true, version: `v${match.core}` } : match;
}

/**
 * Validates a Kubernetes version typed by an operator, like {@link parseTalosVersionInput}.
 * `version` is the talosctl form without `v` (`upgrade-k8s --to 1.34.1`); `terraform` the same
 * with `v` (`talos_kubernetes_version`); `hadLeadingV` records what was typed.
 */
export function parseKubernetesVersionInput(
  input: unknown,
  options: VersionInputOptions = {},
): VersionInput<{ version: string; terraform: string; hadLeadingV: boolean }> {
  const match = matchVersion(input, 'Kubernetes', '1.34.1', options);
  return match.ok ? { ok: true, version: match.core, terraform: `v${match.core}`, hadLeadingV: match.hadLeadingV } : match;
}

/** Why an upgrade path was refused. */
export type UpgradePathCode =
  | 'invalid-version'
  | 'prerelease'
  | 'same-version'
  | 'downgrade'
  | 'skips-minor'
  | 'not-published'
  | 'not-latest-patch'
  | 'running-not-latest-patch'
  | 'unsupported-version'
  | 'host-too-old'
  | 'talos-does-not-support-kubernetes';

/**
 * An upgrade path check: allowed as a patch or a minor step, or as a re-install on the running
 * version (new installer images, same version), or refused with what to do instead.
 */
export type UpgradePath = { ok: true; kind: 'patch' | 'minor' | 'reinstall' } | { ok: false; code: UpgradePathCode; reason: string };

function parseSemver(version: string): semver.SemVer | null {
  return semver.parse(version.trim().replace(/^v/, ''));
}

function refuse(code: UpgradePathCode, reason: string): UpgradePath {
  return { ok: false, code, reason };
}

/** The newest released patch of `minor` (`1.12`) in the factory list, as `v1.12.11`. */
function latestPatch(releases: semver.SemVer[], major: number, minor: number): string | undefined {
  const newest = releases.filter((v) => v.major === major && v.minor === minor).sort(semver.rcompare)[0];
  return newest === undefined ? undefined : `v${newest.version}`;
}

/** Options of {@link checkTalosUpgradePath}. */
export interface TalosUpgradePathOptions {
  /**
   * For a target equal to the running version: the nodes whose installer image, as the rules
   * derive it now, differs from what they run (another schematic). Non-empty makes the request a
   * re-install of those nodes; empty or absent, there is nothing to do. Default none.
   */
  imageChanges?: string[];
  /** The support table: the built-in one with the inventory's rows over it. Default the built-in one. */
  support?: SupportTable;
}

/**
 * Checks a Talos upgrade against the runbook: one adjacent minor at a time, the latest patch of
 * each minor (the one the cluster leaves included), never a downgrade, only versions the Image
 * Factory publishes, and only when the target minor accepts the running host (`upgradeFromMin`).
 * The running version itself is a re-install when some node's installer image changed (a
 * same-version extension or schematic change), and nothing to do otherwise.
 *
 * @param running the version the cluster runs, e.g. `v1.11.6`
 * @param target the requested version, e.g. `v1.12.11`
 * @param factoryVersions the Image Factory's `GET /versions` list; pre-releases are ignored
 */
export function checkTalosUpgradePath(
  running: string,
  target: string,
  factoryVersions: string[],
  options: TalosUpgradePathOptions = {},
): UpgradePath {
  const from = parseSemver(running);
  const to = parseSemver(target);
  if (from === null) return refuse('invalid-version', `the running Talos version ${JSON.stringify(running)} is not a version`);
  if (to === null) return refuse('invalid-version', `the target ${JSON.stringify(target)} is not a Talos version: use the form v1.12.11`);
  if (to.prerelease.length > 0) return refuse('prerelease', `v${to.version} is a pre-release: upgrade only to released versions`);
  const releases = factoryVersions.map(parseSemver).filter((v): v is semver.SemVer => v !== null && v.prerelease.length === 0);
  const cmp = semver.compare(to, from);
  if (cmp === 0) {
    const changes = options.imageChanges ?? [];
    if (changes.length === 0) {
      return refuse(
        'same-version',
        `the cluster already runs v${from.version} with that schematic on every node: nothing to upgrade or re-install`,
      );
    }
    if (!releases.some((v) => semver.eq(v, to))) {
      return refuse(
        'not-published',
        `v${to.version} is not published by the Image Factory, so its installer images cannot be pulled for a re-install`,
      );
    }
    return { ok: true, kind: 'reinstall' };
  }
  if (cmp < 0) {
    return refuse(
      'downgrade',
      `v${to.version} is older than the running v${from.version}: Talos upgrades only move forward; to undo a failed node upgrade use talosctl rollback on that node`,
    );
  }
  const nextMinor = to.major === from.major && to.minor === from.minor + 1;
  const samePatchLine = to.major === from.major && to.minor === from.minor;
  if (!samePatchLine && !nextMinor) {
    const step = latestPatch(releases, from.major, from.minor + 1);
    const first = step === undefined ? `the latest ${from.major}.${from.minor + 1}` : step;
    return refuse('skips-minor', `v${to.version} skips a minor release: upgrade to ${first} first, one adjacent minor at a time`);
  }
  const minor = `${to.major}.${to.minor}`;
  const latest = latestPatch(releases, to.major, to.minor);
  if (!releases.some((v) => semver.eq(v, to))) {
    const instead =
      latest === undefined
        ? `the Image Factory publishes no ${minor} release yet`
        : `upgrade to ${latest}, the latest patch of ${minor}, instead`;
    return refuse('not-published', `v${to.version} is not published by the Image Factory: ${instead}`);
  }
  if (latest !== undefined && latest !== `v${to.version}`) {
    return refuse(
      'not-latest-patch',
      `v${to.version} is not the latest patch of ${minor}: upgrade to ${latest}, the latest patch of ${minor}, instead`,
    );
  }
  const runningLatest = latestPatch(releases, from.major, from.minor);
  if (nextMinor && runningLatest !== undefined && semver.lt(from, runningLatest.slice(1))) {
    const runningMinor = `${from.major}.${from.minor}`;
    return refuse(
      'running-not-latest-patch',
      `the cluster runs v${from.version}, not ${runningLatest}, the latest patch of ${runningMinor}: patch first, as an operation of its own (\`/talos upgrade talos ${runningLatest}\`), then upgrade to v${to.version}; the runbook takes the latest patch of each minor before the next minor`,
    );
  }
  const support = supportFor(to.version, options.support);
  if (support === undefined) return refuse('unsupported-version', unknownMinorRefusal(minor, options.support));
  if (semver.lt(from, support.upgradeFromMin)) {
    return refuse(
      'host-too-old',
      `v${from.version} is too old to upgrade to Talos ${minor}, which needs at least v${support.upgradeFromMin}: upgrade to the latest ${minorOf(support.upgradeFromMin)} first`,
    );
  }
  return { ok: true, kind: nextMinor ? 'minor' : 'patch' };
}

/**
 * Checks a Kubernetes upgrade against the runbook: a newer patch of the same minor or exactly
 * the next minor, never a downgrade, and only to a version the running Talos supports.
 *
 * @param running the Kubernetes version the cluster runs, with or without `v`
 * @param target the requested version, with or without `v`
 * @param talosVersion the Talos version the cluster runs, e.g. `v1.11.6`
 */
export function checkKubernetesUpgradePath(running: string, target: string, talosVersion: string, table?: SupportTable): UpgradePath {
  const from = parseSemver(running);
  const to = parseSemver(target);
  if (from === null) return refuse('invalid-version', `the running Kubernetes version ${JSON.stringify(running)} is not a version`);
  if (to === null)
    return refuse('invalid-version', `the target ${JSON.stringify(target)} is not a Kubernetes version: use the form 1.34.1`);
  if (to.prerelease.length > 0) return refuse('prerelease', `${to.version} is a pre-release: upgrade only to released versions`);
  const cmp = semver.compare(to, from);
  if (cmp === 0) return refuse('same-version', `the cluster already runs Kubernetes ${from.version}: nothing to upgrade`);
  if (cmp < 0) {
    return refuse(
      'downgrade',
      `${to.version} is older than the running ${from.version}: a Kubernetes downgrade is not a normal rollback; prefer fixing forward, and if the control plane is unusable follow the tested etcd recovery path`,
    );
  }
  const nextMinor = to.major === from.major && to.minor === from.minor + 1;
  if (!nextMinor && !(to.major === from.major && to.minor === from.minor)) {
    return refuse(
      'skips-minor',
      `${to.version} skips a minor release: upgrade to the latest ${from.major}.${from.minor + 1} first; Kubernetes moves one minor at a time`,
    );
  }
  if (!talosSupportsKubernetes(talosVersion, to.version, table)) {
    const support = supportFor(talosVersion, table);
    if (support === undefined) return refuse('unsupported-version', unknownMinorRefusal(minorOf(talosVersion), table));
    const range = `supports Kubernetes ${support.kubernetesMin} to ${support.kubernetesMax}`;
    return refuse('talos-does-not-support-kubernetes', `Talos ${talosVersion} ${range}, not ${to.major}.${to.minor}: upgrade Talos first`);
  }
  return { ok: true, kind: nextMinor ? 'minor' : 'patch' };
}

/**
 * The runbook's "use a talosctl client that matches the currently running Talos version", for
 * every operation that runs talosctl: the refusal when the client's own tag is another version,
 * else undefined.
 *
 * @param client the tag `talosctl version --client` prints, e.g. `v1.11.6`
 * @param running the Talos version the nodes to be touched run
 * @param where who runs `running`, for the message; default `the cluster`
 */
export function talosctlClientRefusal(client: string, running: string, where = 'the cluster'): string | undefined {
  const ours = parseSemver(client);
  const theirs = parseSemver(running);
  if (ours !== null && theirs !== null && semver.eq(ours, theirs)) return undefined;
  const wanted = theirs === null ? running : `v${theirs.version}`;
  return `talosctl is ${client} but ${where} runs ${running}; the runbook needs a matching client: install talosctl ${wanted} (or put talosctl-${wanted} in the TALOSCTL_BIN directory)`;
}

/** The versions an operation stored when its plan was made, as read back before each step. */
export interface StoredVersions {
  version?: string;
  fromVersion?: string;
  talosVersion?: string;
}

/**
 * Which version rules an operation's stored versions follow: a Talos upgrade's path, a Kubernetes
 * upgrade's path, or a node operation's (its talosctl matches the Talos the node ran).
 */
export type StoredVersionRules = 'talos' | 'kubernetes' | 'node';

const missing = (what: string): string => `the stored ${what} is missing, so the approved path cannot be checked`;

/**
 * Why the versions read back from the store are not a path the rules allow, empty when they
 * are: the store is not the authority, so a target edited after the approval (a downgrade, a
 * skipped minor, a Kubernetes the running Talos does not support) stops before it reaches talosctl.
 * A Talos path is checked for its shape only: the Image Factory published the target when it was
 * planned, and a patch it publishes since must not stop an upgrade half-way.
 */
export function storedVersionProblems(rules: StoredVersionRules, stored: StoredVersions, table?: SupportTable): string[] {
  const { version, fromVersion, talosVersion } = stored;
  if (rules === 'node') {
    return fromVersion !== undefined && talosVersion !== undefined && fromVersion !== talosVersion
      ? [`the stored talosctl version ${talosVersion} is not ${fromVersion}, the version the node ran when it was planned`]
      : [];
  }
  if (rules === 'talos') {
    if (version === undefined) return [missing('target version')];
    if (fromVersion === undefined) return [missing('running version')];
    const problems: string[] = [];
    if (talosVersion !== undefined && talosVersion !== fromVersion)
      problems.push(`the stored talosctl version ${talosVersion} is not ${fromVersion}, the version the cluster ran when it was planned`);
    // The target itself stands in for the factory's list: published, and the latest of its minor.
    const path = checkTalosUpgradePath(fromVersion, version, [version], { imageChanges: ['stored'], support: table });
    if (!path.ok) problems.push(`the stored path ${fromVersion} → ${version} is not one the rules allow: ${path.reason}`);
    return problems;
  }
  if (version === undefined) return [missing('target version')];
  if (fromVersion === undefined) return [missing('running Kubernetes version')];
  if (talosVersion === undefined) return [missing('Talos version')];
  const path = checkKubernetesUpgradePath(fromVersion, version, talosVersion, table);
  return path.ok ? [] : [`the stored path ${fromVersion} → ${version} on Talos ${talosVersion} is not one the rules allow: ${path.reason}`];
}
