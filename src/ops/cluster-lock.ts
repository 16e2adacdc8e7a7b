import type { Redis } from 'ioredis';

/**
 * One mutating operation per cluster. The lock has no expiry on purpose: an operation
 * that failed half-way keeps it, so nothing else starts on a half-upgraded cluster
 * until an operator cancels the operation.
 */
export interface ClusterLock {
  acquire(cluster: string, opId: string): Promise<{ ok: true } | { ok: false; heldBy: string }>;
  /** Releases only if `opId` holds it. */
  release(cluster: string, opId: string): Promise<boolean>;
  holder(cluster: string): Promise<string | undefined>;
  /**
   * Hands the lock from `from` to `to` in one step, only while `from` holds it: a rollback
   * requested from a stopped upgrade takes over its cluster without a moment in which it is free.
   */
  transfer(cluster: string, from: string, to: string): Promise<boolean>;
}

const key = (cluster: string): string => `talos:lock:${cluster}`;

const RELEASE_IF_HOLDER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const TRANSFER_IF_HOLDER = `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[2] then return 1 end
if holder == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end
return 0`;

export function createClusterLock(redis: Redis): ClusterLock {
  return {
    async acquire(cluster, opId) {
      const set = await redis.set(key(cluster), opId, 'NX');
      if (set === 'OK') return { ok: true };
      const heldBy = await redis.get(key(cluster));
      // Re-acquiring one's own lock (a resumed job) is not a conflict.
      if (heldBy === opId) return { ok: true };
      return { ok: false, heldBy: heldBy ?? 'unknown' };
    },
    async release(cluster, opId) {
      return (await redis.eval(RELEASE_IF_HOLDER, 1, key(cluster), opId)) === 1;
    },
    async holder(cluster) {
      return (await redis.get(key(cluster))) ?? undefined;
    },
    async transfer(cluster, from, to) {
      // Already `to`'s: a transfer sent again after a lost reply is not a conflict.
      return (await redis.eval(TRANSFER_IF_HOLDER, 1, key(cluster), from, to)) === 1;
    },
  };
}
