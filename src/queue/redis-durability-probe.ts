import type { Redis } from 'ioredis';
import type { RedisDurability } from '../config/redis-durability-check.ts';

/** One `CONFIG GET` answer (`[name, value]`), or undefined when the server did not name the setting. */
async function setting(redis: Redis, name: string): Promise<string | undefined> {
  const answer = (await redis.config('GET', name)) as unknown;
  return Array.isArray(answer) && typeof answer[1] === 'string' ? answer[1] : undefined;
}

/**
 * Asks the server whether it keeps its data: AOF on and no eviction. A server that refuses
 * `CONFIG` (a managed Redis, an ACL user without `@admin`) or does not name a setting says so.
 */
export async function probeRedisDurability(redis: Redis): Promise<RedisDurability> {
  try {
    const appendonly = await setting(redis, 'appendonly');
    const maxmemoryPolicy = await setting(redis, 'maxmemory-policy');
    if (appendonly === undefined || maxmemoryPolicy === undefined)
      return { refused: 'the server did not name appendonly and maxmemory-policy' };
    return { appendonly, maxmemoryPolicy };
  } catch (error) {
    return { refused: (error as Error).message };
  }
}
