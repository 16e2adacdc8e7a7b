/** A Redis client that replays what ioredis does when Redis restarts between running a command and answering it. */
import type { Redis } from 'ioredis';

export interface Resending {
  client: Redis;
  /** Whether the first call was sent twice yet. */
  resent(): boolean;
}

/**
 * The first call of `method` runs twice and answers with the second run, as ioredis sends an
 * unanswered command again on the new connection. `afterFirst` runs between the two.
 */
export function resendingOnce(client: Redis, method: 'eval' | 'set', afterFirst?: () => void): Resending {
  let resent = false;
  const proxy = new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== method) return Reflect.get(target, prop, receiver) as unknown;
      const call = (target[method] as (...args: unknown[]) => Promise<unknown>).bind(target);
      return async (...args: unknown[]) => {
        if (!resent) {
          resent = true;
          await call(...args);
          afterFirst?.();
        }
        return call(...args);
      };
    },
  });
  return { client: proxy, resent: () => resent };
}
