import { createHash } from 'node:crypto';
import { z } from 'zod';
import { OpsError } from '../errors.ts';

const Versions = z.array(z.string());

/**
 * The public Image Factory's registry host. A fact of the service, like its API's paths, so it
 * lives with the adapter; the installer-image rules (src/rules/installer-image.ts) read it here.
 */
export const FACTORY_REGISTRY = 'factory.talos.dev';

/** What the ISO's checksum came to: the sha256 of the bytes Image Factory served, or why there is none. */
export type IsoChecksum = { ok: true; sha256: string; bytes: number } | { ok: false; reason: string };

/** Image Factory's public API: the Talos releases it can build, and the boot media it serves. */
export interface ImageFactory {
  /** The registry host the nodes pull installer images from (see {@link installerRegistry}). */
  registry: string;
  versions(signal?: AbortSignal): Promise<string[]>;
  /** `<IMAGE_FACTORY_URL>/image/<schematic>/<version>/<platform>-<arch>.iso`. */
  isoUrl(input: { schematic: string; version: string; platform: string; arch: string }): string;
  /**
   * The sha256 of the ISO at `url`, hashed as it streams in: nothing of it is kept in memory or
   * written to disk. Never throws: a download that fails gives the reason instead.
   */
  isoSha256(url: string, signal?: AbortSignal): Promise<IsoChecksum>;
}

export interface ImageFactoryOptions {
  /** Bound of one API call, in ms. */
  timeoutMs: number;
  /** Bound of one ISO download, in ms (an ISO is some hundred MB); default 10 minutes. */
  downloadTimeoutMs?: number;
  /** Bound of one ISO download's size, in bytes; default 2 GiB (a Talos ISO is a few hundred MB). */
  maxIsoBytes?: number;
}

export function createImageFactory(baseUrl: string, timeoutMs: number, options: Partial<ImageFactoryOptions> = {}): ImageFactory {
  const base = baseUrl.replace(/\/+$/, '');
  const downloadTimeoutMs = options.downloadTimeoutMs ?? 10 * 60_000;
  const maxIsoBytes = options.maxIsoBytes ?? 2 * 1024 ** 3;
  return {
    registry: installerRegistry(baseUrl),
    async versions(signal) {
      const timeout = AbortSignal.timeout(timeoutMs);
      let response: Response;
      try {
        response = await fetch(`${base}/versions`, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
      } catch (error) {
        throw new OpsError('factory-unreachable', `Image Factory at ${base} did not answer: ${(error as Error).message}`, {
          hint: 'check IMAGE_FACTORY_URL and the network path to it',
        });
      }
      if (!response.ok) {
        throw new OpsError('factory-error', `Image Factory answered ${response.status} to GET /versions`);
      }
      const parsed = Versions.safeParse(await response.json());
      if (!parsed.success) throw new OpsError('factory-error', 'Image Factory /versions did not return a list of versions');
      return parsed.data;
    },
    isoUrl: ({ schematic, version, platform, arch }) => `${base}/image/${schematic}/${version}/${platform}-${arch}.iso`,
    async isoSha256(url, signal) {
      const timeout = AbortSignal.timeout(downloadTimeoutMs);
      try {
        const response = await fetch(url, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
        if (!response.ok || response.body === null) {
          await response.body?.cancel();
          return { ok: false, reason: `Image Factory answered ${response.status} ${response.statusText}`.trim() };
        }
        const hash = createHash('sha256');
        let bytes = 0;
        for await (const chunk of response.body) {
          bytes += chunk.byteLength;
          // Never a download without end: an answer larger than any ISO is no ISO, and stops being read.
          // Leaving the loop cancels the body's stream.
          if (bytes > maxIsoBytes)
            return { ok: false, reason: `the download passed ${maxIsoBytes} bytes, more than any Talos ISO; it was stopped` };
          hash.update(chunk);
        }
        return { ok: true, sha256: hash.digest('hex'), bytes };
      } catch (error) {
        const name = (error as Error).name;
        return {
          ok: false,
          reason:
            name === 'TimeoutError'
              ? `the download took longer than ${Math.round(downloadTimeoutMs / 1000)} s`
              : `the download failed: ${(error as Error).message}`,
        };
      }
    },
  };
}

/**
 * The registry host of the installer images, from `IMAGE_FACTORY_URL`: Image Factory serves its
 * HTTP API and its registry on the same host, so a self-hosted factory at
 * `https://factory.example.org` gives `factory.example.org/<platform>-installer/…`. Only an
 * https URL counts: the nodes pull installers over TLS, and a plain-http URL is a proxy or mirror
 * of the API for the bot alone, so installers keep coming from factory.talos.dev. It is where this
 * factory's installers come from, reported as {@link ImageFactory.registry}; which installer a node
 * takes is the rules' (src/rules/installer-image.ts).
 */
export function installerRegistry(imageFactoryUrl: string): string {
  const url = new URL(imageFactoryUrl);
  return url.protocol === 'https:' ? url.host : FACTORY_REGISTRY;
}
