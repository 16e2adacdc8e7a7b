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
