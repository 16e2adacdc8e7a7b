import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A Talos release server over TLS, laid out as GitHub serves a release (siderolabs/talos v1.13.9,
 * `.github/workflows/ci.yaml`, the "Generate Checksums" and "release" steps; `Makefile`
 * `talosctl-linux-amd64`; test/sim/reference/talosctl-release-assets.md):
 * `/<v>/sha256sum.txt` in GNU sha256sum's text format with one line per asset, and
 * `/<v>/talosctl-linux-<arch>`; 404 for a tag or an asset it does not have. Its certificate is
 * self-signed for 127.0.0.1: a client trusts it only when told to (`caFile`), as the bot is through
 * `NODE_EXTRA_CA_CERTS`, never by turning verification off.
 */
export interface ReleaseServer {
  /** `https://127.0.0.1:<port>`: what `TALOSCTL_RELEASE_URL` is set to. */
  url: string;
  /** The PEM of the server's self-signed certificate, to trust. */
  caFile: string;
  /** Every request path, in order. */
  requests: string[];
  /** Publishes (or replaces) a release's talosctl. */
  publish(version: string, release: Release): void;
  /** The sha256 sum.txt lists for `content`. */
  close(): Promise<void>;
}

export interface Release {
  /** The bytes of `talosctl-linux-amd64` and `talosctl-linux-arm64`. */
  binary: string;
  /** What `sha256sum.txt` says of the binary; default its real sum. */
  publishedSum?: string;
  /** Leave the binary out, as a release without that asset. */
  noBinary?: boolean;
}

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A fresh self-signed certificate for 127.0.0.1 (an EC key, valid a day), written to `dir`. */
async function selfSigned(dir: string): Promise<{ key: string; cert: string; certFile: string }> {
  const keyFile = join(dir, 'release-server.key');
  const certFile = join(dir, 'release-server.pem');
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=talos-release-test',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ]);
  return { key: await readFile(keyFile, 'utf8'), cert: await readFile(certFile, 'utf8'), certFile };
}

/** Starts the server; its key and certificate go to `dir`. */
export async function startReleaseServer(dir: string): Promise<ReleaseServer> {
  const { key, cert, certFile } = await selfSigned(dir);
  const releases = new Map<string, Release>();
  const requests: string[] = [];
  const server: Server = createServer({ key, cert }, (req, res) => {
    const path = req.url ?? '';
    requests.push(path);
    const [, version, name] = path.split('/');
    const release = releases.get(version ?? '');
    if (release !== undefined && name === 'sha256sum.txt') {
      const sum = release.publishedSum ?? sha256(release.binary);
      // Other assets around it, as the real file lists two dozen; a reader must take exactly its own line.
      res.end(
        `${sha256(`${version} initramfs`)}  initramfs-amd64.xz\n${sum}  talosctl-linux-amd64\n${sum}  talosctl-linux-arm64\n${sha256(`${version} vmlinuz`)}  vmlinuz-amd64\n`,
      );
      return;
    }
    if (release !== undefined && release.noBinary !== true && (name === 'talosctl-linux-amd64' || name === 'talosctl-linux-arm64')) {
      res.setHeader('content-type', 'application/octet-stream');
      // In two writes, so the client streams the body as it does a real 80 MB asset.
      const half = Math.floor(release.binary.length / 2);
      res.write(release.binary.slice(0, half));
      res.end(release.binary.slice(half));
      return;
    }
    res.statusCode = 404;
    res.end('Not Found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caFile: certFile,
    requests,
    publish: (version, release) => void releases.set(version, release),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The bot's environment for downloads from `server` as it runs by default: `TALOSCTL_DOWNLOAD` left
 * unset (blank), the server's certificate trusted through Node's `NODE_EXTRA_CA_CERTS`, the cache in `cacheDir`.
 */
export function releaseEnv(server: ReleaseServer, cacheDir: string): Record<string, string> {
  return { TALOSCTL_DOWNLOAD: '', TALOSCTL_RELEASE_URL: server.url, NODE_EXTRA_CA_CERTS: server.caFile, TALOSCTL_CACHE_DIR: cacheDir };
}
