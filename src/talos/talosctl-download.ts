import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { OpsError } from '../errors.ts';
import { createTalosctlCache } from './talosctl-cache.ts';

/**
 * Fetches the talosctl of a Talos release over TLS into a cache directory only the bot may write
 * (0700), checked against the release's `sha256sum.txt` (asset names and format:
 * test/sim/reference/talosctl-release-assets.md). A cached binary is named `talosctl-vX.Y.Z`, as in
 * a `TALOSCTL_BIN` directory, is hashed again before each use, and the least recently used ones
 * are dropped when the cache outgrows its bound (see talosctl-cache.ts).
 */
export interface TalosctlDownloader {
  /** The cache directory the binaries go to. */
  readonly cacheDir: string;
  /** The path of talosctl `version`, downloaded first when the cache does not hold it; checked before it is returned. */
  ensure(version: string, signal?: AbortSignal): Promise<string>;
  /** The cached, checked binary of `version`, or undefined; never downloads. A binary changed on disk is deleted and refused. */
  cached(version: string): Promise<string | undefined>;
  /** Keeps `version` in the cache while a job runs it; call the returned function when the job is done with it. */
  hold(version: string): () => void;
}

export interface TalosctlDownloadOptions {
  /** Release downloads, without the version: `https://github.com/siderolabs/talos/releases/download`. Only https. */
  baseUrl: string;
  cacheDir: string;
  /** The bound on the cache, in bytes: one download larger than it is refused, and the oldest binaries go first. */
  maxBytes: number;
  /** One download's bound (the checksum file and the binary together), in ms. */
  timeoutMs: number;
  /** The client's architecture; default this machine's. */
  arch?: 'amd64' | 'arm64';
}

const VERSION = /^v\d+\.\d+\.\d+$/;
const SHA256 = /^[0-9a-f]{64}$/;

/** The published sha256 of `asset` in a `sha256sum.txt` (`<hex>  <name>` per line), or undefined. */
export function publishedSha256(sums: string, asset: string): string | undefined {
  for (const line of sums.split('\n')) {
    const match = /^([0-9a-fA-F]{64}) [ *](.+)$/.exec(line.trimEnd());
    if (match && match[2] === asset) return match[1]!.toLowerCase();
  }
  return undefined;
}

/** `work`, or the abort of `signal` when it comes first; the work itself goes on for whoever else waits on it. */
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Counts the bytes that pass and fails the stream once they exceed `max`. */
function byteBound(max: number, url: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > max) {
        done(
          new OpsError('talosctl-download-failed', `${url} is larger than the talosctl cache's bound of ${max} bytes; it was not kept`, {
            hint: 'raise TALOSCTL_CACHE_MAX_BYTES if the release really is that large, or check TALOSCTL_RELEASE_URL',
          }),
        );
        return;
      }
      done(null, chunk);
    },
  });
}

export function createTalosctlDownloader(options: TalosctlDownloadOptions): TalosctlDownloader {
  const arch = options.arch ?? (process.arch === 'arm64' ? 'arm64' : 'amd64');
  const asset = `talosctl-linux-${arch}`;
  const base = options.baseUrl.replace(/\/+$/, '');
  // The client runs with the clusters' credentials: a plain-text source is no source (config validation says so first).
  if (!base.startsWith('https://')) {
    throw new OpsError('talosctl-download-failed', `${base} is not an https:// URL: talosctl is downloaded only over TLS`, {
      hint: 'set TALOSCTL_RELEASE_URL to an https:// mirror, or TALOSCTL_DOWNLOAD=false',
    });
  }
  const cache = createTalosctlCache({ dir: options.cacheDir, maxBytes: options.maxBytes });
  // Two jobs that want the same version in this process share one download; across replicas the
  // atomic rename below means each may download, but a reader only ever sees a whole, checked file.
  const inFlight = new Map<string, Promise<string>>();

  const cached = async (version: string): Promise<string | undefined> => {
    if (!VERSION.test(version)) return undefined;
    await cache.prepare();
    return cache.verified(version);
  };

  const get = async (url: string, signal: AbortSignal): Promise<Response> => {
    let response: Response;
    try {
      response = await fetch(url, { signal, redirect: 'follow' });
    } catch (error) {
      throw new OpsError('talosctl-download-failed', `${url} could not be fetched (${(error as Error).message})`, {
        cause: error,
        hint: 'check that the bot reaches the release server (TALOSCTL_RELEASE_URL), or put the binary in the TALOSCTL_BIN directory',
      });
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new OpsError('talosctl-download-failed', `${url} answered ${response.status}`, {
        hint:
          response.status === 404
            ? 'that release has no such asset: check the version, or put the binary in the TALOSCTL_BIN directory'
            : 'try again later, or put the binary in the TALOSCTL_BIN directory',
      });
    }
    return response;
  };

  // Bounded by its own timeout only: a second job waiting on the same download must not lose it when the first is cancelled.
  const download = async (version: string): Promise<string> => {
    const signal = AbortSignal.timeout(options.timeoutMs);
    const sumsUrl = `${base}/${version}/sha256sum.txt`;
    const expected = publishedSha256(await (await get(sumsUrl, signal)).text(), asset);
    if (expected === undefined || !SHA256.test(expected)) {
      throw new OpsError('talosctl-download-failed', `${sumsUrl} lists no sha256 for ${asset}`, {
        hint: 'that release publishes no talosctl for this platform: put the binary in the TALOSCTL_BIN directory',
      });
    }
    await cache.prepare();
    // Written under a name no reader looks for, not executable, and renamed only once checked.
    const partial = join(options.cacheDir, `.talosctl-${version}.${randomBytes(6).toString('hex')}.part`);
    try {
      const url = `${base}/${version}/${asset}`;
      const response = await get(url, signal);
      const hash = createHash('sha256');
      const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
      body.on('data', (chunk: Buffer) => hash.update(chunk));
      await pipeline(body, byteBound(options.maxBytes, url), createWriteStream(partial, { mode: 0o600, flags: 'wx' }), { signal });
      const actual = hash.digest('hex');
      if (actual !== expected) {
        throw new OpsError(
          'talosctl-checksum-mismatch',
          `talosctl ${version} downloaded from ${base} has sha256 ${actual.slice(0, 12)}…, but its release publishes ${expected.slice(0, 12)}…; it was deleted and not run`,
          { hint: 'check TALOSCTL_RELEASE_URL and any proxy between the bot and it; nothing was installed' },
        );
      }
      const path = await cache.install(version, partial, expected);
      await cache.prune(version);
      return path;
    } finally {
      await rm(partial, { force: true });
      await rm(`${partial}.sha256`, { force: true });
    }
  };

  return {
    cacheDir: options.cacheDir,
    cached,
    hold: (version) => cache.hold(version),
    async ensure(version, signal) {
      if (!VERSION.test(version)) throw new OpsError('talosctl-missing', `${version} is not a Talos release version`);
      const hit = await cached(version);
      if (hit !== undefined) return hit;
      const pending = inFlight.get(version);
      if (pending !== undefined) return pending;
      const fresh = download(version).finally(() => inFlight.delete(version));
      inFlight.set(version, fresh);
      return signal === undefined ? fresh : abortable(fresh, signal);
    },
  };
}
