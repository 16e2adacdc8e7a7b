import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { OpsError } from '../errors.ts';

/**
 * The directory of downloaded talosctl binaries. Each `talosctl-vX.Y.Z` has a sidecar
 * `talosctl-vX.Y.Z.sha256` in sha256sum's format, written from the release's `sha256sum.txt`
 * before the binary appears: the binary is hashed against it before every use, and the sidecar's
 * mtime is the binary's last use, which decides what goes first when the cache is over its bound.
 */
export interface TalosctlCache {
  readonly dir: string;
  /** The directory, made or checked to be the bot's own and closed to everyone else (0700). */
  prepare(): Promise<void>;
  /** The binary of `version`, hashed against its recorded sum and marked used; undefined when absent. A changed one is deleted and refused. */
  verified(version: string): Promise<string | undefined>;
  /** Records a checked binary: its sum first, then the binary itself, each by an atomic rename. */
  install(version: string, partial: string, sha256: string): Promise<string>;
  /** Keeps `version` from being dropped until the returned function is called (a running job uses it). */
  hold(version: string): () => void;
  /** Drops the least recently used binaries until the cache fits its bound; never one held, nor `keep`. */
  prune(keep: string): Promise<string[]>;
}

export interface TalosctlCacheOptions {
  dir: string;
  /** The bound on the binaries kept, in bytes. */
  maxBytes: number;
}

const BINARY = /^talosctl-(v\d+\.\d+\.\d+)$/;

export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

export function createTalosctlCache(options: TalosctlCacheOptions): TalosctlCache {
  const { dir } = options;
  const held = new Map<string, number>();
  const binaryPath = (version: string): string => join(dir, `talosctl-${version}`);
  const sumPath = (version: string): string => `${binaryPath(version)}.sha256`;

  const drop = async (version: string): Promise<void> => {
    // The binary first: without it, a left-over sum is harmless; the other way round, a binary would have nothing to be checked against.
    await rm(binaryPath(version), { force: true });
    await rm(sumPath(version), { force: true });
  };

  const prepare = async (): Promise<void> => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const info = await lstat(dir);
    if (!info.isDirectory()) {
      throw new OpsError('talosctl-cache-unsafe', `the talosctl cache ${dir} is not a directory (a symbolic link or a file)`, {
        hint: 'point TALOSCTL_CACHE_DIR at a directory of its own, or remove what is there; nothing was downloaded',
      });
    }
    const uid = process.getuid?.();
    if (uid !== undefined && info.uid !== uid) {
      throw new OpsError('talosctl-cache-unsafe', `the talosctl cache ${dir} belongs to uid ${info.uid}, not to the bot (uid ${uid})`, {
        hint: 'point TALOSCTL_CACHE_DIR at a directory the bot creates itself (an emptyDir), or chown it to the bot; nothing was downloaded',
      });
    }
    if ((info.mode & 0o077) !== 0) {
      // Others could write here: what they may have left (a binary and a sum to match) cannot be trusted.
      await chmod(dir, 0o700);
      for (const name of await readdir(dir)) await rm(join(dir, name), { recursive: true, force: true });
    }
  };

  return {
    dir,
    prepare,
    async verified(version) {
      const path = binaryPath(version);
      if ((await stat(path).catch(() => undefined)) === undefined) return undefined;
      const recorded = await readFile(sumPath(version), 'utf8').then(
        (text) => /^([0-9a-f]{64}) {2}/.exec(text)?.[1],
        () => undefined,
      );
      const actual = await sha256OfFile(path);
      if (recorded === undefined || actual !== recorded) {
        await drop(version);
        const was = recorded === undefined ? 'has no recorded checksum' : `was downloaded with sha256 ${recorded.slice(0, 12)}…`;
        throw new OpsError(
          'talosctl-changed-on-disk',
          `talosctl ${version} in ${dir} changed on disk after its download: it has sha256 ${actual.slice(0, 12)}… and ${was}; it was deleted and not run`,
          {
            hint: `something other than the bot wrote to ${dir}: find out what before trusting this pod; the next request downloads ${version} again`,
          },
        );
      }
      const now = new Date();
      await utimes(sumPath(version), now, now).catch(() => undefined);
      return path;
    },
    async install(version, partial, sha256) {
      const sumPartial = `${partial}.sha256`;
      await writeFile(sumPartial, `${sha256}  talosctl-${version}\n`, { mode: 0o600, flag: 'wx' });
      await rename(sumPartial, sumPath(version));
      await chmod(partial, 0o700);
      await rename(partial, binaryPath(version));
      return binaryPath(version);
    },
    hold(version) {
      held.set(version, (held.get(version) ?? 0) + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (held.get(version) ?? 1) - 1;
        if (left <= 0) held.delete(version);
        else held.set(version, left);
      };
    },
    async prune(keep) {
      const entries: { version: string; size: number; lastUse: number }[] = [];
      for (const name of await readdir(dir)) {
        const version = BINARY.exec(name)?.[1];
        if (version === undefined) continue;
        const binary = await stat(binaryPath(version)).catch(() => undefined);
        const sum = await stat(sumPath(version)).catch(() => undefined);
        if (binary === undefined) continue;
        entries.push({ version, size: binary.size, lastUse: sum?.mtimeMs ?? 0 });
      }
      let total = entries.reduce((sum, e) => sum + e.size, 0);
      const dropped: string[] = [];
      for (const entry of entries.sort((a, b) => a.lastUse - b.lastUse)) {
        if (total <= options.maxBytes) break;
        if (entry.version === keep || held.has(entry.version)) continue;
        await drop(entry.version);
        total -= entry.size;
        dropped.push(entry.version);
      }
      return dropped;
    },
  };
}
