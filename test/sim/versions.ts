/** Version facts: talosctl build info, installer image references and the installer's pre-flight checks. */
import semver from 'semver';
import { minorOf, supportFor, talosSupportsKubernetes } from '../../src/talos/compatibility.ts';

/** The talosctl clients the simulator ships as `bin/talosctl-versions/talosctl-<v>`. */
export const CLIENT_VERSIONS = ['v1.10.9', 'v1.11.5', 'v1.11.6', 'v1.12.11', 'v1.13.8', 'v1.13.9'] as const;
/** The client behind `bin/talosctl`. */
export const DEFAULT_CLIENT_VERSION = 'v1.11.6';

const GO_VERSION_BY_MINOR: Record<string, string> = {
  '1.9': 'go1.23.4',
  '1.10': 'go1.24.5',
  '1.11': 'go1.24.11',
  '1.12': 'go1.25.5',
  '1.13': 'go1.26.2',
  '1.14': 'go1.26.5',
};

export interface BuildInfo {
  tag: string;
  sha: string;
  goVersion: string;
}

/** Deterministic build facts of a Talos release, so repeated runs print the same bytes. */
export function buildInfo(version: string): BuildInfo {
  let hash = 0x811c9dc5;
  for (const ch of version) hash = Math.imul(hash ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return {
    tag: version,
    sha: hash.toString(16).padStart(8, '0'),
    goVersion: GO_VERSION_BY_MINOR[minorOf(version)] ?? 'go1.24.11',
  };
}

export function bare(version: string): string {
  return version.replace(/^v/, '');
}

export function withV(version: string): string {
  return version.startsWith('v') ? version : `v${version}`;
}

export function compareVersions(a: string, b: string): number {
  return semver.compare(bare(a), bare(b));
}

/** talosctl 1.14+ multiplexes on the client: NODE column always, partial failures are errors. */
export function isMultiplexingClient(clientVersion: string): boolean {
  return semver.gte(bare(clientVersion), '1.14.0-alpha.0');
}

/** talosctl 1.11+ prints PROTOCOL and STORAGE in `etcd status`. */
export function hasEtcdStorageColumns(clientVersion: string): boolean {
  return semver.gte(bare(clientVersion), '1.11.0-alpha.0');
}

export interface InstallerImage {
  ref: string;
  registry: string;
  /** `nocloud`, `metal`, ... or `generic` for the platform-less installer. */
  platform: string;
  secureboot: boolean;
  /** Schematic id; undefined for the stock `ghcr.io/siderolabs/installer`. */
  schematic?: string;
  version: string;
}

/**
 * Parses the installer references Talos accepts:
 * `factory.talos.dev/<platform>-installer[-secureboot]/<schematic>:<v>`,
 * `factory.talos.dev/installer[-secureboot]/<schematic>:<v>` and `ghcr.io/siderolabs/installer:<v>`.
 */
export function parseInstallerImage(ref: string): InstallerImage | undefined {
  const withoutDigest = ref.split('@')[0] ?? ref;
  const factory = /^factory\.talos\.dev\/(?:([a-z0-9]+)-)?installer(-secureboot)?\/([0-9a-f]{64}):(v[0-9][^:/]*)$/.exec(withoutDigest);
  if (factory) {
    return {
      ref,
      registry: 'factory.talos.dev',
      platform: factory[1] ?? 'generic',
      secureboot: factory[2] !== undefined,
      schematic: factory[3],
      version: factory[4] ?? '',
    };
  }
  const stock = /^ghcr\.io\/siderolabs\/installer:(v[0-9][^:/]*)$/.exec(withoutDigest);
  if (stock) {
    return { ref, registry: 'ghcr.io', platform: 'generic', secureboot: false, version: stock[1] ?? '' };
  }
  return undefined;
}

/**
 * The installer's pre-flight checks (compatibility/talos_version.go, kubernetes_version.go):
 * the message of the first failing check, or undefined when the upgrade may proceed.
 */
export function installerPreflight(hostVersion: string, targetVersion: string, kubeletVersion: string): string | undefined {
  const host = bare(hostVersion);
  const target = bare(targetVersion);
  const row = supportFor(target);
  if (!row) return `upgrades to version ${target} are not supported`;
  const hostCore = `${semver.major(host)}.${semver.minor(host)}.${semver.patch(host)}`;
  if (semver.lt(hostCore, row.upgradeFromMin)) return `host version ${host} is too old to upgrade to Talos ${target}`;
  const [major, minor] = row.talos.split('.').map(Number);
  const maxHostDowngrade = `${major}.${(minor ?? 0) + 2}.0`;
  if (semver.gte(hostCore, maxHostDowngrade)) return `host version ${host} is too new to downgrade to Talos ${target}`;
  if (!talosSupportsKubernetes(target, kubeletVersion)) {
    const k = bare(kubeletVersion);
    const tooOld = semver.lt(`${minorOf(k)}.0`, `${row.kubernetesMin}.0`);
    return `version of Kubernetes ${k} is too ${tooOld ? 'old' : 'new'} to be used with Talos ${target}`;
  }
  return undefined;
}
