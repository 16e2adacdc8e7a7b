import type { Redis } from 'ioredis';
import { BotError } from '../errors.ts';
import { EPOCH_KEY } from './redis-epoch.ts';

/** Whether an operation still holds its cluster: `epoch-lost` when Redis lost its data, whoever the key names now. */
export type LockHold = 'held' | 'lost' | 'epoch-lost';

/** A lock asked for after Redis lost its data: no lock is taken or handed on until an operator re-seeds the epoch. */
export class RedisEpochLostError extends BotError {
  constructor() {
    super(
      'redis-epoch-lost',
      'Redis lost the data the bot keeps (cluster locks, operations), so the bot takes no cluster until an operator has checked the clusters and restarted it with REDIS_EPOCH_RESEED=true',
    );
    this.name = 'RedisEpochLostError';
  }
}

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
  /**
   * Whether `opId` still holds `cluster`, read in one script with the epoch: the fence checked before
   * each step and each mutating call, since a Redis that failed over, restarted without AOF or evicted
   * the key can lose a lock that has no expiry.
   */
  holds(cluster: string, opId: string): Promise<LockHold>;
}

export interface ClusterLockOptions {
  /** The epoch this process adopted (see `redis-epoch.ts`); without one (tests of the lock alone) the epoch is not compared. */
  epoch?: { expected(): string };
}

const key = (cluster: string): string => `talos:lock:${cluster}`;

/** Every script starts here: -1 when an epoch is expected (ARGV[1] not empty) and the stored one differs. */
const EPOCH_GUARD = `
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return -1 end`;

const ACQUIRE = `${EPOCH_GUARD}
if redis.call('SET', KEYS[1], ARGV[2], 'NX') then return 1 end
return 0`;

const HOLDS = `${EPOCH_GUARD}
if redis.call('GET', KEYS[1]) == ARGV[2] then return 1 end
return 0`;

const RELEASE_IF_HOLDER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const TRANSFER_IF_HOLDER = `${EPOCH_GUARD}
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[3] then return 1 end
if holder == ARGV[2] then redis.call('SET', KEYS[1], ARGV[3]) return 1 end
return 0`;

export function createClusterLock(redis: Redis, options: ClusterLockOptions = {}): ClusterLock {
  const epoch = (): string => options.epoch?.expected() ?? '';
  /** Runs a script fenced by the epoch; -1 (the epoch lost) is thrown for the writes, answered for `holds`. */
  const fenced = async (script: string, cluster: string, ...args: string[]): Promise<number> =>
    (await redis.eval(script, 2, key(cluster), EPOCH_KEY, epoch(), ...args)) as number;
  return {
    async acquire(cluster, opId) {
      const set = await fenced(ACQUIRE, cluster, opId);
      if (set === -1) throw new RedisEpochLostError();
      if (set === 1) return { ok: true };
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
      const moved = await fenced(TRANSFER_IF_HOLDER, cluster, from, to);
      if (moved === -1) throw new RedisEpochLostError();
      return moved === 1;
    },
    async holds(cluster, opId) {
      const answer = await fenced(HOLDS, cluster, opId);
      return answer === -1 ? 'epoch-lost' : answer === 1 ? 'held' : 'lost';
    },
  };
}
