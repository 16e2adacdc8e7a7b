import { afterAll, beforeAll, beforeEach } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServer } from './redis-server.ts';

/** A private redis-server in a temp dir, and the clients a test file opened on it. */
export interface RedisFixture {
  server: RedisServer;
  /** A new connection, closed by `stop`; several of them stand for several replicas. */
  client(): Redis;
  /** Empties the database, so every test starts from nothing. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRedisFixture(): Promise<RedisFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'talos-chatops-redis-'));
  const server = await startRedisServer(dir);
  const clients: Redis[] = [];
  const client = (): Redis => {
    const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    clients.push(redis);
    return redis;
  };
  const admin = client();
  return {
    server,
    client,
    async flush() {
      await admin.flushdb();
    },
    async stop() {
      await Promise.all(clients.map((c) => c.quit().catch(() => undefined)));
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The Redis fixture of a test file: one private redis-server started before its tests, emptied
 * before each, stopped after all. The returned fixture stands for the one started then.
 */
export function useRedisFixture(): RedisFixture {
  let started: RedisFixture | undefined;
  const fixture = (): RedisFixture => {
    if (started === undefined) throw new Error('the Redis fixture is used before its beforeAll ran');
    return started;
  };
  beforeAll(async () => {
    started = await startRedisFixture();
  });
  afterAll(async () => {
    await started?.stop();
  });
  beforeEach(async () => {
    await started?.flush();
  });
  return {
    get server() {
      return fixture().server;
    },
    client: () => fixture().client(),
    flush: () => fixture().flush(),
    stop: () => fixture().stop(),
  };
}
