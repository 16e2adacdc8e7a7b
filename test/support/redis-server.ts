import { readFileSync } from 'node:fs';
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

/** Whether `port` can be listened on now, on every address (the bot listens on `::`). */
function available(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, () => server.close(() => resolve(true)));
  });
}

/** The kernel's range of ephemeral ports: the local ports of outgoing connections come from it. */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low !== undefined && high !== undefined && low > 0) return [low, high];
  } catch {
    // Not Linux: the IANA range.
  }
  return [49152, 65535];
}

/**
 * A port free now, chosen below the ephemeral range: a process restarted on the same port (the
 * bot after a kill, redis-server after a restart) must not find it taken by the local end of some
 * outgoing connection, which an ephemeral port could be.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralRange();
  const from = 10_000;
  const to = Math.max(from + 1000, low - 1);
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = from + Math.floor(Math.random() * (to - from));
    if (await available(port)) return port;
  }
  throw new Error(`no free port between ${from} and ${to}`);
}

/** Thrown when redis-server ended before it answered: on its first start, most likely a port another process took first. */
class EndedBeforeReady extends Error {}

async function waitForPing(url: string, ended: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (ended()) throw new EndedBeforeReady(`redis-server at ${url} ended before it answered`);
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
  let port = await freePort();
  const password = options.password === false ? undefined : (options.password ?? randomBytes(16).toString('hex'));
  const urlOf = (p: number): string => (password === undefined ? `redis://127.0.0.1:${p}` : `redis://:${password}@127.0.0.1:${p}`);
  let url = urlOf(port);
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
        // As the bot requires for production: a key is never evicted to make room.
        '--maxmemory-policy',
        'noeviction',
        '--protected-mode',
        'no',
        ...(password === undefined ? [] : ['--requirepass', password]),
      ],
      { stdio: 'ignore' },
    );
    const started = child;
    started.on('error', (error) => {
      throw new Error(`cannot start redis-server (${error.message}); install it, e.g. apt-get install redis-server`);
    });
    await waitForPing(url, () => started.exitCode !== null || started.signalCode !== null);
  };
  const stop = async (options: { hard?: boolean } = {}): Promise<void> => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((r) => running.once('exit', r));
    running.kill(options.hard === true ? 'SIGKILL' : 'SIGTERM');
    await exited;
  };
  // `freePort` frees the port it found, so another run may take it before redis-server binds it: then another port.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await launch();
      break;
    } catch (error) {
      if (!(error instanceof EndedBeforeReady) || attempt === 5) throw error;
      port = await freePort();
      url = urlOf(port);
    }
  }
  return {
    url,
    port,
    password,
    stop,
    restart: async () => {
      await stop();
      await launch();
    },
  };
}
