import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

/** Written once, at the bot's first start against a Redis; its loss means Redis lost its data. */
export const EPOCH_KEY = 'talos:epoch';

/**
 * The latest moment (ms, by the clocks of the replicas) any process saw Redis whole: every check moves it
 * forward, never back. Redis brought back from an older copy carries the epoch of that copy, so the epoch
 * alone cannot tell; this key then goes back in time, which each running process notices against the
 * value it saw last (kept in its own memory, outside Redis).
 */
export const SEEN_KEY = 'talos:epoch:seen';

/** One per cluster once a loss was told in its channel (SET NX: once, whatever the replicas and polls); cleared by a re-seed. */
export const LOSS_TOLD_PREFIX = 'talos:epoch-lost:';

/**
 * How far `SEEN_KEY` may go back before it counts as a restore, in ms: Redis with AOF `everysec` may lose
 * the last second of writes in a crash, and replicas' clocks differ a little. A copy older than this is noticed.
 */
export const RESTORE_TOLERANCE_MS = 60_000;

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

/** Reads the epoch and moves `SEEN_KEY` forward in one step; answers the stored epoch and the seen time before the move. */
const CHECK_SCRIPT = `
local before = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if tonumber(ARGV[1]) > before then redis.call('SET', KEYS[2], ARGV[1]) end
return {redis.call('GET', KEYS[1]) or '', tostring(before)}`;

export interface EpochOptions {
  /** `REDIS_EPOCH_RESEED=true`: write a new epoch although bot data without one is in Redis. */
  reseed: boolean;
  now: () => Date;
  /** Called once, when the loss is first seen (an error log at start-up wiring). */
  onLost: (reason: string) => void;
  /** How far the seen time may go back before it counts as a restore from an older copy, in ms. Default `RESTORE_TOLERANCE_MS`. */
  restoreToleranceMs?: number;
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
  'Redis lost the data the bot keeps: its operations, cluster locks and approvals may be missing or out of date, so the bot refuses to act';

/** Deletes the marks of a loss told in the clusters' channels: a re-seed starts a new epoch, whose loss is told again. */
async function forgetToldLosses(redis: Redis): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${LOSS_TOLD_PREFIX}*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

/**
 * Adopts the stored epoch, or writes one at the first start (SET NX, so replicas starting together agree).
 * A Redis with bot data and no epoch lost it: the bot starts, refuses to act and says so, unless `reseed`.
 * Each `check` then compares the stored epoch with the adopted one (a flush, a replaced epoch) and the
 * seen time with the one this process saw last (a restore from an older copy).
 */
export async function establishEpoch(redis: Redis, options: EpochOptions): Promise<RedisEpoch> {
  const tolerance = options.restoreToleranceMs ?? RESTORE_TOLERANCE_MS;
  const stored = await redis.get(EPOCH_KEY);
  let id: string | undefined = stored ?? undefined;
  let lost: string | undefined;
  if (id === undefined) {
    if (!options.reseed && (await holdsBotData(redis))) {
      lost = `${LOST}; it found operations or locks but no epoch at start`;
    } else {
      if (options.reseed) await forgetToldLosses(redis);
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
  // The latest seen time this process wrote or read: Redis never holds an older one unless it went back.
  let seen: number | undefined;
  return {
    expected: () => (lost === undefined && id !== undefined ? id : NO_EPOCH),
    async check() {
      if (lost !== undefined) return false;
      // Taken before the call: a check that overlaps another compares with what was seen before either was sent.
      const floor = seen;
      const at = options.now().getTime();
      const [now, before] = (await redis.eval(CHECK_SCRIPT, 2, EPOCH_KEY, SEEN_KEY, String(at))) as [string, string];
      const previous = Number(before);
      if (now !== id) markLost(`${LOST}; the epoch ${now === '' ? 'is missing' : 'was replaced'} since this process started`);
      else if (floor !== undefined && previous < floor - tolerance)
        markLost(
          `${LOST}; it was brought back from an older copy: the last time the bot saw it whole went back from ${new Date(floor).toISOString()} to ${previous === 0 ? 'nothing' : new Date(previous).toISOString()}`,
        );
      seen = Math.max(seen ?? 0, previous, at);
      return lost === undefined;
    },
    lostReason: () => lost,
  };
}
