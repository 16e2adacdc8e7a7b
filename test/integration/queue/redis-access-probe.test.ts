import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeRedisAccess } from '../../../src/queue/redis-access-probe.ts';
import { botProcess, offlineBotEnv, warningAtStart } from '../../support/bot-process.ts';
import { inventoryYaml } from '../../support/inventory-yaml.ts';
import { startRedisServer, type RedisServer } from '../../support/redis-server.ts';

const PASSWORD_CANARY = 'redisPasswordCanary-3b9d0c7e5a1f';

let dir: string;
let open: RedisServer;
let secured: RedisServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'redis-start-rule-'));
  [open, secured] = await Promise.all([startRedisServer(join(dir, 'open'), { password: false }), startRedisServer(join(dir, 'secured'))]);
  await writeFile(join(dir, 'clusters.yaml'), inventoryYaml());
});

afterAll(async () => {
  await Promise.all([open?.stop(), secured?.stop()]);
  await rm(dir, { recursive: true, force: true });
});

describe('probeRedisAccess', () => {
  it('finds that a server with a password refuses a client without one', async () => {
    expect(await probeRedisAccess(secured.url, 10_000)).toBe('password-required');
  });

  it('finds that a server without a password lets anyone in', async () => {
    expect(await probeRedisAccess(open.url, 10_000)).toBe('open');
  });

  it('is not fooled by a password in the URL when the server has none', async () => {
    expect(await probeRedisAccess(`redis://:${PASSWORD_CANARY}@127.0.0.1:${open.port}`, 10_000)).toBe('open');
  });
});

describe('start-up with a production cluster (node src/entry.ts)', () => {
  const env = (redisUrl: string, extra: Record<string, string> = {}): Record<string, string> => offlineBotEnv(dir, redisUrl, extra);

  it('refuses a Redis that needs no password, says what to do, and never prints the password of the URL', async () => {
    // Arrange
    const bot = botProcess(env(`redis://:${PASSWORD_CANARY}@127.0.0.1:${open.port}`));

    // Act
    const started = await bot.start().then(
      () => true,
      () => false,
    );
    const code = await bot.stop();

    // Assert
    expect({ started, code }).toEqual({ started: false, code: 2 });
    expect(bot.logs()).toContain(
      `talos-chatops cannot start. REDIS_URL is invalid:\n  - REDIS_URL carries a password, but the Redis at 127.0.0.1:${open.port} has none configured and answers anyone without it, and the inventory has production clusters (production) whose operations, approvals and locks it would hold: set a password on the server (requirepass, or an ACL user) and put it in REDIS_URL as redis://:<password>@host:port (rediss:// for TLS), or set ALLOW_INSECURE_REDIS=true to accept an unprotected Redis\n`,
    );
    expect(bot.logs()).not.toContain(PASSWORD_CANARY.slice(0, 16));
  });

  it('starts against it with ALLOW_INSECURE_REDIS=true, warning at start', async () => {
    // Act: Slack is unreachable here, so the start itself never completes; the warning comes before it
    const line = await warningAtStart(env(open.url, { ALLOW_INSECURE_REDIS: 'true' }), 'ALLOW_INSECURE_REDIS');

    // Assert
    expect(line).toMatchObject({
      level: 40,
      clusters: ['production'],
      msg: `the Redis at 127.0.0.1:${open.port} answers clients without a password; ALLOW_INSECURE_REDIS=true accepts that for the production clusters production: anyone who reaches it can forge approvals and operations`,
    });
  });
});
