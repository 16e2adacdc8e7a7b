import { waitOn } from './wait-clock.ts';

/**
 * The time as the bot reads it. Injected from the composition root, so every deadline, wait and
 * timestamp follows one clock: the system's in production, a test's where a test needs one.
 */
export interface Clock {
  now(): Date;
  /** Resolves after `ms` milliseconds; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => new Date(),
  // Not node:timers/promises: that rejects with its own AbortError, and callers report the signal's reason (a cancel, a lost lease).
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** One look at what a wait waits for: done with its value, or still pending with what was seen. */
export type PollObservation<T> = { done: true; value: T } | { done: false; pending: string };

/** How a wait ended: its value, or the bound passed with the last thing still pending. */
export type PollOutcome<T> = { ok: true; value: T; elapsedMs: number } | { ok: false; pending: string; elapsedMs: number };

export interface PollOptions {
  /** The wait's bound, in ms, from the first look. */
  timeoutMs: number;
  /** The pause between looks, in ms. */
  intervalMs: number;
  signal?: AbortSignal;
  /** Told after every look that is still pending, with the time waited so far (for a progress reply). */
  onPending?: (pending: string, elapsedMs: number) => Promise<void> | void;
}

/**
 * Looks until `look` says done or the bound passes, on the injected clock. The first look is
 * immediate and one look always follows the bound's start, so a zero bound still observes once.
 * An aborted signal rejects, as the sleep between looks does.
 */
export async function pollUntil<T>(
  clock: Clock,
  options: PollOptions,
  look: (attempt: number) => Promise<PollObservation<T>>,
): Promise<PollOutcome<T>> {
  const started = clock.now().getTime();
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    const seen = await look(attempt);
    const elapsedMs = clock.now().getTime() - started;
    if (seen.done) return { ok: true, value: seen.value, elapsedMs };
    if (elapsedMs >= options.timeoutMs) return { ok: false, pending: seen.pending, elapsedMs };
    await options.onPending?.(seen.pending, elapsedMs);
    // A pause while waiting on the world outside: it counts as waiting, not as the bot's own work.
    await waitOn(() => clock.sleep(options.intervalMs, options.signal));
  }
}
