import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { access, constants, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OpsError } from '../../../src/errors.ts';
import { createTalosctlBinaries } from '../../../src/talos/talosctl-binary.ts';
import { createTalosctlDownloader, publishedSha256 } from '../../../src/talos/talosctl-download.ts';

const run = promisify(execFile);

/** A talosctl stand-in that says which client it is, as `talosctl version --client` would. */
function fakeTalosctl(version: string): string {
  return `#!/bin/sh\necho "Client:"\necho "\tTag:         ${version}"\n`;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * A release server with GitHub's layout (test/sim/reference/talosctl-release-assets.md):
 * `/<v>/sha256sum.txt` in sha256sum's text format, `/<v>/talosctl-linux-amd64`, 404 for the rest.
 */
interface Release {
  binary: string;
  /** What sha256sum.txt says of the binary; default its real sum. */
  publishedSum?: string;
  /** Leave the binary out, as a release without that asset. */
  noBinary?: boolean;
}

describe('talosctl download', () => {
  let server: Server;
  let baseUrl: string;
  let cacheDir: string;
  const releases = new Map<string, Release>();
  const requests: string[] = [];

  beforeEach(async () => {
    releases.clear();
    requests.length = 0;
    cacheDir = await mkdtemp(join(tmpdir(), 'talosctl-cache-'));
    server = createServer((req, res) => {
      requests.push(req.url ?? '');
      const [, version, name] = (req.url ?? '').split('/');
      const release = releases.get(version ?? '');
      if (release !== undefined && name === 'sha256sum.txt') {
        const sum = release.publishedSum ?? sha256(release.binary);
        res.end(`${sha256('kernel')}  vmlinuz-amd64\n${sum}  talosctl-linux-amd64\n${sha256('arm')}  talosctl-linux-arm64\n`);
        return;
      }
      if (release !== undefined && name === 'talosctl-linux-amd64' && release.noBinary !== true) {
        // Sent in two chunks so the body is streamed, as a large asset is.
        res.write(release.binary.slice(0, 5));
        setTimeout(() => res.end(release.binary.slice(5)), 20);
        return;
      }
      res.statusCode = 404;
      res.end('Not Found');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(cacheDir, { recursive: true, force: true });
  });

  const downloader = () => createTalosctlDownloader({ baseUrl, cacheDir, timeoutMs: 10_000, arch: 'amd64' });

  async function rejection(promise: Promise<unknown>): Promise<OpsError> {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpsError);
    return error as OpsError;
  }

  it('reads the sum of exactly the named asset from a sha256sum.txt', () => {
    const sums = `${'a'.repeat(64)}  talosctl-linux-amd64.bundle\n${'b'.repeat(64)}  talosctl-linux-amd64\n`;
    expect(publishedSha256(sums, 'talosctl-linux-amd64')).toBe('b'.repeat(64));
    expect(publishedSha256(sums, 'talosctl-linux-arm64')).toBeUndefined();
  });

  it('downloads the release talosctl, checks its sha256 and keeps it runnable in the cache', async () => {
    // Arrange
    releases.set('v1.13.9', { binary: fakeTalosctl('v1.13.9') });

    // Act
    const path = await downloader().ensure('v1.13.9');

    // Assert
    expect(path).toBe(join(cacheDir, 'talosctl-v1.13.9'));
    const { stdout } = await run(path, ['version', '--client']);
    expect(stdout).toContain('v1.13.9');
    expect(await readdir(cacheDir)).toEqual(['talosctl-v1.13.9']);
  });

  it('downloads once for two jobs that want the same version, and not again once cached', async () => {
    // Arrange
    releases.set('v1.13.9', { binary: fakeTalosctl('v1.13.9') });
    const shared = downloader();

    // Act
    const [a, b] = await Promise.all([shared.ensure('v1.13.9'), shared.ensure('v1.13.9')]);
    await downloader().ensure('v1.13.9');

    // Assert
    expect(a).toBe(b);
    expect(requests.filter((url) => url.endsWith('/talosctl-linux-amd64'))).toHaveLength(1);
  });

  it('refuses a binary whose sha256 is not the published one, and leaves nothing in the cache', async () => {
    // Arrange
    releases.set('v1.13.9', { binary: fakeTalosctl('v1.13.9'), publishedSum: sha256('the real release') });

    // Act
    const error = await rejection(downloader().ensure('v1.13.9'));

    // Assert
    expect(error.code).toBe('talosctl-checksum-mismatch');
    expect(error.message).toContain('deleted and not run');
    expect(await readdir(cacheDir)).toEqual([]);
    expect(await downloader().cached('v1.13.9')).toBeUndefined();
  });

  it('refuses a release that has no such asset (404), and leaves nothing in the cache', async () => {
    // Arrange
    releases.set('v1.13.9', { binary: fakeTalosctl('v1.13.9'), noBinary: true });

    // Act
    const missingAsset = await rejection(downloader().ensure('v1.13.9'));
    const missingRelease = await rejection(downloader().ensure('v1.99.0'));

    // Assert
    expect(missingAsset.code).toBe('talosctl-download-failed');
    expect(missingAsset.message).toContain('404');
    expect(missingRelease.code).toBe('talosctl-download-failed');
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('serves the exact version to an operation when TALOSCTL_BIN holds only another one', async () => {
    // Arrange: the image's one binary is older than what the cluster runs.
    releases.set('v1.13.9', { binary: fakeTalosctl('v1.13.9') });
    const binaries = createTalosctlBinaries('/usr/local/bin/talosctl', downloader());

    // Act
    const found = await binaries.forVersion('v1.13.9');

    // Assert
    expect(found).toEqual({ path: join(cacheDir, 'talosctl-v1.13.9'), version: 'v1.13.9' });
    await access(found.path, constants.X_OK);
  });

  it("refuses a mutating operation's client when the download fails, but lets a read fall back to the image's binary", async () => {
    // Arrange: no release served at all.
    const binaries = createTalosctlBinaries('/usr/local/bin/talosctl', downloader());

    // Act
    const refused = await rejection(binaries.forVersion('v1.13.9'));
    const read = await binaries.forVersion('v1.13.9', { closest: true });

    // Assert
    expect(refused.code).toBe('talosctl-download-failed');
    expect(read).toEqual({ path: '/usr/local/bin/talosctl', version: undefined });
  });
});
