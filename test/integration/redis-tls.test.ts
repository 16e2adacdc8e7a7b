import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/redis-server.ts';
import { compileCacheDir } from '../support/compile-cache.ts';

// A rediss:// REDIS_URL against a real redis-server that only speaks TLS and requires
// a password, its certificate signed by a private CA: the bot's connection (in a
// child process, as the bot runs) trusts that CA only through NODE_EXTRA_CA_CERTS,
// the way docs/deploy.md tells a deployment to give it.

const CONNECTION = fileURLToPath(new URL('../../src/queue/redis-connection.ts', import.meta.url));
const PASSWORD = 'tls-test-password-0123456789abcdef';

let dir: string;
let server: ChildProcess;
let port: number;

function openssl(args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

/** Pings through `connectRedis` in a fresh Node process; its output, or the error it reports. */
async function pingFromBot(url: string, env: Record<string, string> = {}): Promise<string> {
  const script = `
    import { connectRedis } from ${JSON.stringify(CONNECTION)};
    const redis = connectRedis(process.env.URL);
    // The first connection error is the verdict: ioredis would retry it for ever.
    redis.on('error', (error) => { console.log('error: ' + error.message); process.exit(0); });
    const timer = setTimeout(() => { console.log('no answer'); process.exit(0); }, 2000);
    redis.ping().then((answer) => console.log(answer), (error) => console.log('error: ' + error.message)).finally(() => { clearTimeout(timer); redis.disconnect(); });
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '', URL: url, NODE_COMPILE_CACHE: compileCacheDir(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  return out.trim();
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'talos-chatops-redis-tls-'));
  const curve = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...curve, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=talos-chatops test CA']);
  openssl(['req', ...curve, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost']);
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'san.ext',
  ]);
  port = await freePort();
  server = spawn(
    'redis-server',
    [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--bind',
      '127.0.0.1 -::1',
      '--tls-cert-file',
      join(dir, 'server.pem'),
      '--tls-key-file',
      join(dir, 'server.key'),
      '--tls-ca-cert-file',
      join(dir, 'ca.pem'),
      '--tls-auth-clients',
      'no',
      '--requirepass',
      PASSWORD,
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    { stdio: 'ignore' },
  );
  // Ready once the bot's own connection gets an answer.
  for (let attempt = 0; attempt < 100; attempt++) {
    if ((await pingFromBot(`rediss://:${PASSWORD}@localhost:${port}`, { NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') })) === 'PONG') return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('redis-server with TLS did not answer');
});

afterAll(() => {
  server?.kill('SIGKILL');
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('REDIS_URL with rediss://', () => {
  it('connects over TLS, verifies the server against the CA in NODE_EXTRA_CA_CERTS and authenticates', async () => {
    expect(await pingFromBot(`rediss://:${PASSWORD}@localhost:${port}`, { NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') })).toBe('PONG');
  });

  it('refuses a server whose certificate no trusted CA signed', async () => {
    expect(await pingFromBot(`rediss://:${PASSWORD}@localhost:${port}`)).toMatch(/^error: .*certificate/i);
  });

  it('is refused without the password', async () => {
    expect(await pingFromBot(`rediss://localhost:${port}`, { NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') })).toMatch(/NOAUTH/);
  });

  it('gets no answer in plain text from a TLS-only port', async () => {
    expect(await pingFromBot(`redis://:${PASSWORD}@localhost:${port}`)).not.toBe('PONG');
  });
});
