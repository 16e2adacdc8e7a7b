import type { Redis } from 'ioredis';
import { pollUntil, systemClock, type Clock } from '../time/clock.ts';

/**
 * One walker per operation. BullMQ runs a job at least once: a job whose lock lapsed (its
 * replica died, or Redis went away for a moment) runs again, possibly while the first run is
 * still going, and a click can enqueue the next run before the previous one returned. Two
 * walks of one operation would both act on its next node and both write its audit. The lease
 * makes the second wait until the first has returned; it then walks from the stored state.
 */
export interface RunLease {
  /**
   * Runs `work` while holding the operation's lease, waiting for it first while another run
   * holds it. `work` gets a signal that aborts when the lease was lost to another run (after
   * Redis lost its key); `signal` aborts the wait and the work.
   */
  hold<T>(opId: string, work: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Whether a run holds the operation's lease right now. */
  held(opId: string): Promise<boolean>;
}

export interface RunLeaseOptions {
  /** How long a lease outlives its holder, in ms: a crashed run's operation is taken up after this. */
  ttlMs: number;
  /** Interval between attempts while waiting, in ms. Default 100. */
  pollMs?: number;
  /** Redis key prefix, for a lease over something else of the operation. Default `talos:op-run`. */
  prefix?: string;
  /** Paces the wait for a held lease. Default the system's clock. */
  clock?: Clock;
}

/** Extends our lease, or takes it again when Redis lost the key (a restart after the lease's deadline); 0 when another run holds it. */
const RENEW = `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if not holder then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export function createRunLease(redis: Redis, options: RunLeaseOptions): RunLease {
  const { ttlMs, pollMs = 100, prefix = 'talos:op-run', clock = systemClock } = options;
  const key = (opId: string): string => `${prefix}:${opId}`;
  return {
    async hold(opId, work, signal) {
      const token = crypto.randomUUID();
      // A take whose reply was lost (the client sent it again after Redis restarted) left our own token there.
      const taken = async (): Promise<boolean> =>
        (await redis.set(key(opId), token, 'PX', ttlMs, 'NX')) === 'OK' || (await redis.get(key(opId))) === token;
      // No bound of its own: the holder's run ends, or its lease lapses `ttlMs` after it died; `signal` ends the wait sooner.
      await pollUntil(clock, { timeoutMs: Number.POSITIVE_INFINITY, intervalMs: pollMs, ...(signal ? { signal } : {}) }, async () =>
        (await taken()) ? { done: true, value: undefined } : { done: false, pending: 'another run holds the lease' },
      );
      const lost = new AbortController();
      const renew = setInterval(
        () => {
          redis.eval(RENEW, 1, key(opId), token, String(ttlMs)).then(
            (held) => {
              if (held !== 1) lost.abort(new Error(`the run lease of ${opId} passed to another run`));
            },
            // Redis is away: the lease holds until its deadline, and the next renewal tries again.
            () => undefined,
          );
        },
        Math.max(50, Math.floor(ttlMs / 3)),
      );
      try {
        return await work(signal ? AbortSignal.any([signal, lost.signal]) : lost.signal);
      } finally {
        clearInterval(renew);
        await redis.eval(RELEASE, 1, key(opId), token).catch(() => undefined);
      }
    },
    async held(opId) {
      return (await redis.exists(key(opId))) === 1;
    },
  };
}
