import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

/** Written once, at the bot's first start against a Redis; its loss means Redis lost its data. */
export const EPOCH_KEY = 'talos:epoch';

/** Never an epoch: what the lock compares against once the epoch is known to be lost, so nothing matches. */
const NO_EPOCH = '-';

/**
 * The epoch this process adopted at start. The cluster lock compares it in the same script as the
 * lock itself, so no lock is taken or trusted once Redis lost its data; `check` is what `/readyz` and
 * the `redis_epoch_missing` gauge read. Once lost, it stays lost until a restart re-seeds it on purpose.
 */
export interface RedisEpoch {
  /** The id to compare the stored one with; never equal to a stored id once the epoch is lost. */
  expected(): string;
  /** Reads the stored epoch: false (for good) once it is missing or is another one. */
  check(): Promise<boolean>;
  /** Why the bot refuses to act, once it does. */
  lostReason(): string | undefined;
}

export interface EpochOptions {
  /** `REDIS_EPOCH_RESEED=true`: write a new epoch although bot data without one is in Redis. */
  reseed: boolean;
  now: () => Date;
  /** Called once, when the loss is first seen (an error log at start-up wiring). */
  onLost: (reason: string) => void;
}

/** Whether Redis holds anything the bot wrote (besides the epoch): a start without an epoch then follows a loss. */
async function holdsBotData(redis: Redis): Promise<boolean> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', 'talos:*', 'COUNT', 1000);
    if (keys.some((k) => k !== EPOCH_KEY)) return true;
    cursor = next;
  } while (cursor !== '0');
  return false;
}

const LOST =
  'Redis lost the data the bot keeps (its epoch key is gone or was replaced): cluster locks and operations may be missing, so the bot refuses to act';

/**
 * Adopts the stored epoch, or writes one at the first start (SET NX, so replicas starting together agree).
 * A Redis with bot data and no epoch lost it: the bot starts, refuses to act and says so, unless `reseed`.
 */
export async function establishEpoch(redis: Redis, options: EpochOptions): Promise<RedisEpoch> {
  const stored = await redis.get(EPOCH_KEY);
  let id: string | undefined = stored ?? undefined;
  let lost: string | undefined;
  if (id === undefined) {
    if (!options.reseed && (await holdsBotData(redis))) {
      lost = `${LOST}; it found operations or locks but no epoch at start`;
    } else {
      const fresh = `${randomUUID()} ${options.now().toISOString()}`;
      await redis.set(EPOCH_KEY, fresh, 'NX');
      id = (await redis.get(EPOCH_KEY)) ?? undefined;
      if (id === undefined) lost = `${LOST}; the epoch written at start was gone at once`;
    }
  }
  const markLost = (reason: string): void => {
    if (lost !== undefined) return;
    lost = reason;
    options.onLost(reason);
  };
  if (lost !== undefined) options.onLost(lost);
  return {
    expected: () => (lost === undefined && id !== undefined ? id : NO_EPOCH),
    async check() {
      if (lost !== undefined) return false;
      const now = await redis.get(EPOCH_KEY);
      if (now !== id) markLost(`${LOST}; the epoch ${now === null ? 'is missing' : 'was replaced'} since this process started`);
      return lost === undefined;
    },
    lostReason: () => lost,
  };
}
