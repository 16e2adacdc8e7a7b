import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';

import { Redis } from 'ioredis';

export interface RedisServer {
  /** With the password when the server has one: `redis://:<password>@127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** The server's password; undefined for a server that lets anyone in. */
  password: string | undefined;
  /** Stops the server (SIGTERM, or SIGKILL when `hard`), keeping its data directory. */
  stop(options?: { hard?: boolean }): Promise<void>;
  /** Starts it again on the same port and data directory (AOF replays what was written). */
  restart(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function waitForPing(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return;
    } catch {
      if (Date.now() > deadline) throw new Error(`redis-server at ${url} did not answer within 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      client.disconnect();
    }
  }
}

export interface RedisServerOptions {
  /** `false` runs a server without a password; by default it gets a random one, as deployments have. */
  password?: string | false;
}

/** A private `redis-server` on a free port with AOF persistence and a password, as production runs it. */
export async function startRedisServer(dir: string, options: RedisServerOptions = {}): Promise<RedisServer> {
  await mkdir(dir, { recursive: true });
  const port = await freePort();
  const password = options.password === false ? undefined : (options.password ?? randomBytes(16).toString('hex'));
  const url = password === undefined ? `redis://127.0.0.1:${port}` : `redis://:${password}@127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--protected-mode', 'no', ...(password === undefined ? [] : ['--requirepass', password])],
      { stdio: 'ignore' },
    );
    child.on('error', (error) => {
      throw new Error(`cannot start redis-server (${error.message}); install it, e.g. apt-get install redis-server`);
    });
    await waitForPing(url);
  };
  const stop = async (options: { hard?: boolean } = {}): Promise<void> => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((r) => running.once('exit', r));
    running.kill(options.hard === true ? 'SIGKILL' : 'SIGTERM');
    await exited;
  };
  await launch();
  return { url, port, password, stop, restart: async () => { await stop(); await launch(); } };
}

