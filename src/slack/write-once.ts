// Exactly-once writes on a Web API that may apply a call and still fail to answer it.
import { systemClock, type Clock } from '../time/clock.ts';

/**
 * What a failed write tells: `refused` (Slack answered and wrote nothing: `ok:false`, a 4xx),
 * `limited` (a 429: not written, send again after `Retry-After`), or `lost` (a 5xx, a timeout,
 * a cut connection: the write may have been applied).
 */
export type WriteOutcome = { kind: 'refused' } | { kind: 'limited'; retryAfterMs: number } | { kind: 'lost' };

export function writeOutcome(error: unknown): WriteOutcome {
  const { code, statusCode, retryAfter } = (error ?? {}) as { code?: unknown; statusCode?: unknown; retryAfter?: unknown };
  if (code === 'slack_webapi_rate_limited_error')
    return { kind: 'limited', retryAfterMs: (typeof retryAfter === 'number' ? retryAfter : 1) * 1000 };
  // A 408 or 5xx may come from a proxy or from Slack after the write; other 4xx are refusals.
  if (code === 'slack_webapi_http_error')
    return typeof statusCode === 'number' && (statusCode >= 500 || statusCode === 408) ? { kind: 'lost' } : { kind: 'refused' };
  // No answer at all: a timeout, a reset or refused connection, a DNS failure.
  if (code === 'slack_webapi_request_error') return { kind: 'lost' };
  return { kind: 'refused' };
}

export interface WriteOnceOptions {
  /** Sends before giving up when the answers keep getting lost. Default 5. */
  attempts?: number;
  /** Pause after the first lost answer, in ms, doubling each time up to `maxBackoffMs`. Default 250. */
  backoffMs?: number;
  /** Default 5 000 ms. */
  maxBackoffMs?: number;
  /** 429 answers waited out before giving up. Default 10. */
  rateLimits?: number;
  /** Longest `Retry-After` honoured, in ms; a longer one gives up. Default 60 000. */
  maxRetryAfterMs?: number;
  /** The clock the waits between sends run on. Default the system's. */
  clock?: Pick<Clock, 'sleep'>;
}

export interface WriteOnce<T> {
  /** Sends the write once, without the client's own retries. */
  send: () => Promise<T>;
  /**
   * Looks in Slack for the write's result, when an earlier send may have been applied.
   * Without it, a lost answer is thrown at once: the caller looks before sending again.
   */
  find?: () => Promise<T | undefined>;
  /** An earlier send may already have been applied (the job runs again): look before the first send. */
  maybeSent?: boolean;
}

/**
 * Sends a write exactly once: a 429 is waited out and sent again (Slack wrote nothing); after a
 * lost answer the write is looked for first and adopted when found, else sent again, with
 * backoff, a bounded number of times. Never sends while it cannot tell whether an earlier
 * send landed (the look-up itself failing): it tries the look-up again, then throws.
 */
export async function writeOnce<T>(write: WriteOnce<T>, options: WriteOnceOptions = {}): Promise<T> {
  const { attempts = 5, backoffMs = 250, maxBackoffMs = 5000, rateLimits = 10, maxRetryAfterMs = 60_000, clock = systemClock } = options;
  const pause = (ms: number): Promise<void> => clock.sleep(ms);
  let uncertain = write.maybeSent === true && write.find !== undefined;
  let failures = 0;
  let limited = 0;
  const delay = (): number => Math.min(maxBackoffMs, backoffMs * 2 ** (failures - 1));
  for (;;) {
    if (uncertain) {
      let found: T | undefined;
      try {
        found = await write.find!();
      } catch (error) {
        failures += 1;
        if (failures >= attempts) throw error;
        await pause(delay());
        continue;
      }
      if (found !== undefined) return found;
      uncertain = false;
    }
    try {
      return await write.send();
    } catch (error) {
      const outcome = writeOutcome(error);
      if (outcome.kind === 'refused') throw error;
      if (outcome.kind === 'limited') {
        limited += 1;
        if (limited > rateLimits || outcome.retryAfterMs > maxRetryAfterMs) throw error;
        await pause(outcome.retryAfterMs);
        continue;
      }
      if (write.find === undefined) throw error;
      uncertain = true;
      failures += 1;
      await pause(delay());
      if (failures >= attempts) {
        // The last send's answer was lost too: one more look decides between its result and the error.
        const found = await write.find().catch(() => undefined);
        if (found !== undefined) return found;
        throw error;
      }
    }
  }
}
