import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitForOptions {
  /** Default 10000. */
  timeoutMs?: number;
  /** Default 20. */
  intervalMs?: number;
  /** Named in the timeout error, e.g. "an approval message in #ops". */
  description?: string;
}

/** What a polled function returns: the value waited for, or a falsy "not yet". */
export type Polled<T> = T | undefined | null | false;

/**
 * Polls `fn` until it returns a truthy value and resolves with it. A throw counts as
 * "not yet", so `fn` may contain assertions; the last one is quoted if time runs out.
 * `fn` may be async (a Redis read, an HTTP request): each call is awaited before the next.
 */
export async function waitFor<T>(fn: () => Polled<T> | Promise<Polled<T>>, opts: WaitForOptions = {}): Promise<T> {
  const { timeoutMs = 10_000, intervalMs = 20, description = 'condition' } = opts;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  let lastValue: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
      lastValue = value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) break;
    await sleep(intervalMs);
  }
  const detail = lastError === undefined ? `last value: ${String(lastValue)}` : `last error: ${describe(lastError)}`;
  throw new Error(`waitFor timed out after ${timeoutMs} ms waiting for ${description} (${detail})`);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
