import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/config-error.ts';
import { redisDurabilityRule } from '../../../src/config/redis-durability-check.ts';
import { probeRedisDurability } from '../../../src/queue/redis-durability-probe.ts';
import { botProcess, offlineBotEnv, warningAtStart } from '../../support/bot-process.ts';
import { inventoryYaml } from '../../support/inventory-yaml.ts';
import { startRedisServer, type RedisServer } from '../../support/redis-server.ts';

let dir: string;
let durable: RedisServer;
let lossy: RedisServer;
const clients: Redis[] = [];
const client = (url: string): Redis => {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  clients.push(redis);
  return redis;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'redis-durability-'));
  [durable, lossy] = await Promise.all([startRedisServer(join(dir, 'durable')), startRedisServer(join(dir, 'lossy'))]);
  // What a managed Redis often runs with: no AOF, and eviction under memory pressure.
  await client(lossy.url).config('SET', 'appendonly', 'no');
  await client(lossy.url).config('SET', 'maxmemory-policy', 'allkeys-lru');
  // An ACL user without @admin, as a managed Redis hands out: CONFIG is refused.
  await client(durable.url).call('ACL', 'SETUSER', 'app', 'on', '>app-secret-1234', '~*', '&*', '+@all', '-@admin');
  await writeFile(join(dir, 'clusters.yaml'), inventoryYaml());
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.quit().catch(() => undefined)));
  await Promise.all([durable?.stop(), lossy?.stop()]);
  await rm(dir, { recursive: true, force: true });
});

describe('probeRedisDurability', () => {
  it('reads AOF and the eviction policy of the server', async () => {
    expect(await probeRedisDurability(client(durable.url))).toEqual({ appendonly: 'yes', maxmemoryPolicy: 'noeviction' });
    expect(await probeRedisDurability(client(lossy.url))).toEqual({ appendonly: 'no', maxmemoryPolicy: 'allkeys-lru' });
  });

  it('says so when the server refuses CONFIG', async () => {
    const url = `redis://app:app-secret-1234@127.0.0.1:${durable.port}`;
    expect(await probeRedisDurability(client(url))).toEqual({ refused: expect.stringMatching(/^NOPERM/) });
  });
});

describe('redisDurabilityRule', () => {
  const input = { host: 'redis:6379', productionClusters: ['production'], check: 'enforce' as const };

  it('lets a Redis without production clusters, or a durable one, through without a word', () => {
    expect(redisDurabilityRule({ appendonly: 'no', maxmemoryPolicy: 'allkeys-lru' }, { ...input, productionClusters: [] })).toBeUndefined();
    expect(redisDurabilityRule({ appendonly: 'yes', maxmemoryPolicy: 'noeviction' }, input)).toBeUndefined();
  });

  it('refuses each problem with its fix, and a Redis that cannot be asked', () => {
    const refusal = (d: Parameters<typeof redisDurabilityRule>[0]): string[] => {
      try {
        redisDurabilityRule(d, input);
        return [];
      } catch (error) {
        return error instanceof ConfigError ? error.problems : [`not a ConfigError: ${String(error)}`];
      }
    };
    expect(refusal({ appendonly: 'no', maxmemoryPolicy: 'noeviction' })).toEqual([
      expect.stringContaining('runs without AOF (appendonly is no)'),
    ]);
    expect(refusal({ appendonly: 'yes', maxmemoryPolicy: 'volatile-lru' })).toEqual([
      expect.stringContaining('evicts keys under memory pressure (maxmemory-policy is volatile-lru)'),
    ]);
    expect(refusal({ refused: 'NOPERM' })).toEqual([
      expect.stringContaining('does not let the bot read its settings (CONFIG GET: NOPERM)'),
    ]);
    expect(refusal({ refused: 'NOPERM' })[0]).toContain('or set REDIS_DURABILITY_CHECK=warn to accept the risk');
  });

  it('accepts any of them with REDIS_DURABILITY_CHECK=warn, with a warning', () => {
    expect(redisDurabilityRule({ refused: 'NOPERM' }, { ...input, check: 'warn' })).toContain('REDIS_DURABILITY_CHECK=warn accepts that');
  });
});

describe('start-up with a production cluster (node src/entry.ts)', () => {
  const env = (redisUrl: string, extra: Record<string, string> = {}): Record<string, string> => offlineBotEnv(dir, redisUrl, extra);

  it('refuses a Redis without AOF that evicts keys, and says what to do', async () => {
    // Arrange
    const bot = botProcess(env(lossy.url));

    // Act
    const started = await bot.start().then(
      () => true,
      () => false,
    );
    const code = await bot.stop();

    // Assert
    expect({ started, code }).toEqual({ started: false, code: 2 });
    expect(bot.logs()).toContain(`the Redis at 127.0.0.1:${lossy.port} runs without AOF (appendonly is no)`);
    expect(bot.logs()).toContain('evicts keys under memory pressure (maxmemory-policy is allkeys-lru)');
    expect(bot.logs()).toContain('run Redis with appendonly yes and maxmemory-policy noeviction, or set REDIS_DURABILITY_CHECK=warn');
  });

  it('starts against it with REDIS_DURABILITY_CHECK=warn, warning at start', async () => {
    // Act: Slack is unreachable here, so the start itself never completes; the warning comes before it
    const line = await warningAtStart(env(lossy.url, { REDIS_DURABILITY_CHECK: 'warn' }), 'REDIS_DURABILITY_CHECK');

    // Assert
    expect(line).toMatchObject({ level: 40, clusters: ['production'] });
    expect(line.msg).toContain('REDIS_DURABILITY_CHECK=warn accepts that for the production clusters production');
  });
});
