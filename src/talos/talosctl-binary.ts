import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import semver from 'semver';
import { OpsError } from '../errors.ts';
import type { TalosctlDownloader } from './talosctl-download.ts';

/**
 * `TALOSCTL_BIN` names one binary, or a directory of versioned ones
 * (`talosctl-v1.11.6`, …). The runbook wants a client that matches the running Talos.
 */
export interface TalosctlBinaries {
  /**
   * The binary for a cluster running `runningVersion`; the newest one when the version is
   * not known yet. With `closest`, a read-only caller takes the newest of the same minor
   * when the exact version is missing; mutating operations insist on the exact match. With
   * `imageOnly`, only the image's binaries answer: nothing is downloaded and the cache is not read.
   */
  forVersion(runningVersion: string | undefined, options?: TalosctlChoice): Promise<TalosctlBinary>;
}

export interface TalosctlChoice {
  closest?: boolean;
  imageOnly?: boolean;
}

export interface TalosctlBinary {
  path: string;
  version: string | undefined;
  /** For a downloaded binary: lets the cache drop it again once the job that asked for it is done. */
  release?: () => void;
}

/**
 * With a downloader (the default; `TALOSCTL_DOWNLOAD=false` turns it off), a known version missing
 * from `TALOSCTL_BIN` is fetched from its release into the cache: the exact client, for a mutating
 * operation as for a read. A version the image carries is never downloaded. A failed download
 * leaves the answer to `TALOSCTL_BIN` alone (the closest one for a read, else the download's
 * refusal); a tampered one is refused even to a read, so it is said out loud.
 */
export function createTalosctlBinaries(setting: string, downloader?: TalosctlDownloader): TalosctlBinaries {
  const local = localBinaries(setting);
  if (downloader === undefined) return local;
  return {
    async forVersion(runningVersion, options = {}) {
      if (runningVersion === undefined || options.imageOnly === true) return local.forVersion(runningVersion, options);
      const exact = await local.forVersion(runningVersion).catch(() => undefined);
      if (exact !== undefined && exact.version === runningVersion) return exact;
      // Held from before the download, so no other job's download drops it before this job runs it.
      const release = downloader.hold(runningVersion);
      try {
        return { path: await downloader.ensure(runningVersion), version: runningVersion, release };
      } catch (error) {
        release();
        const tampered =
          error instanceof OpsError && (error.code === 'talosctl-checksum-mismatch' || error.code === 'talosctl-changed-on-disk');
        if (options.closest === true && !tampered) return local.forVersion(runningVersion, options);
        throw error;
      }
    },
  };
}

/**
 * Whether `error` says a talosctl could not be trusted (a checksum that is not the release's, a
 * cached binary changed on disk, a cache directory that is not the bot's): never answered by
 * falling back to another client, so that it is said out loud.
 */
export function isUntrustedTalosctl(error: unknown): boolean {
  return (
    error instanceof OpsError &&
    (error.code === 'talosctl-checksum-mismatch' || error.code === 'talosctl-changed-on-disk' || error.code === 'talosctl-cache-unsafe')
  );
}

function localBinaries(setting: string): TalosctlBinaries {
  return {
    async forVersion(runningVersion, options = {}) {
      const info = await stat(setting).catch(() => undefined);
      if (!info?.isDirectory()) return { path: setting, version: undefined };
      const entries = (await readdir(setting))
        .map((name) => ({ name, version: /^talosctl-(v\d+\.\d+\.\d+)$/.exec(name)?.[1] }))
        .filter((e): e is { name: string; version: string } => e.version !== undefined)
        .sort((a, b) => semver.rcompare(a.version, b.version));
      if (entries.length === 0) {
        throw new OpsError('talosctl-missing', `${setting} holds no talosctl-vX.Y.Z binaries`, {
          hint: 'put versioned talosctl binaries there, or point TALOSCTL_BIN at one binary',
        });
      }
      if (runningVersion === undefined) return { path: join(setting, entries[0]!.name), version: entries[0]!.version };
      const minor = (v: string): string => v.split('.').slice(0, 2).join('.');
      const match =
        entries.find((e) => e.version === runningVersion) ??
        (options.closest === true ? (entries.find((e) => minor(e.version) === minor(runningVersion)) ?? entries[0]) : undefined);
      if (!match) {
        throw new OpsError(
          'talosctl-version-mismatch',
          `no talosctl ${runningVersion} in ${setting}, and the client must match the running Talos`,
          {
            hint: `add talosctl-${runningVersion} to ${setting}`,
          },
        );
      }
      return { path: join(setting, match.name), version: match.version };
    },
  };
}
