import type { Clock } from './clock.ts';

/** How bounded work ended: its value, or the deadline passed first (its signal is aborted then). */
export type DeadlineOutcome<T> = { ok: true; value: T } | { ok: false };

/** The reason the work's signal carries when its deadline passes. */
export class DeadlineExceeded extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'DeadlineExceeded';
  }
}

/**
 * Runs `work` for at most `ms` milliseconds on the injected clock. When the deadline passes first,
 * the work's signal aborts (with {@link DeadlineExceeded}) and the outcome is `{ ok: false }` at
 * once, even when the work ignores its signal (a file read, a Redis command queued while the
 * connection is down): nobody waits on it after that. An error of the work is thrown as it is;
 * an abort of `options.signal` (a cancel) aborts the work and rejects with its reason.
 */
export function withDeadline<T>(
  clock: Pick<Clock, 'sleep'>,
  ms: number,
  work: (signal: AbortSignal) => Promise<T>,
  options: { signal?: AbortSignal } = {},
): Promise<DeadlineOutcome<T>> {
  const outer = options.signal;
  if (outer?.aborted) return Promise.reject(outer.reason as Error);
  const controller = new AbortController();
  // Aborted when the work settles first, so the clock's timer is cleared rather than left running.
  const timer = new AbortController();
  return new Promise<DeadlineOutcome<T>>((resolve, reject) => {
    const settle = (): void => {
      timer.abort();
      outer?.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      settle();
      controller.abort(outer!.reason);
      reject(outer!.reason as Error);
    };
    outer?.addEventListener('abort', onAbort, { once: true });
    clock.sleep(ms, timer.signal).then(
      () => {
        settle();
        controller.abort(new DeadlineExceeded(ms));
        resolve({ ok: false });
      },
      () => undefined,
    );
    Promise.resolve()
      .then(() => work(controller.signal))
      .then(
        (value) => {
          settle();
          resolve({ ok: true, value });
        },
        (error: unknown) => {
          settle();
          reject(error as Error);
        },
      );
  });
}
