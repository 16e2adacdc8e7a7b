import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Measures how much of a step's wall time was spent waiting on the outside world
 * (talosctl, tofu, the Kubernetes API, poll intervals), so the bot's own overhead per
 * node is the remainder. Nested or concurrent waits count once: the clock tracks
 * the time during which at least one wait was open.
 */
export class WaitClock {
  private open = 0;
  private openedAt = 0;
  private total = 0;

  async around<T>(work: () => Promise<T>): Promise<T> {
    if (this.open === 0) this.openedAt = performance.now();
    this.open += 1;
    try {
      return await work();
    } finally {
      this.open -= 1;
      if (this.open === 0) this.total += performance.now() - this.openedAt;
    }
  }

  /** Waiting time so far, in ms, including a wait that is still open. */
  get waitedMs(): number {
    return this.total + (this.open > 0 ? performance.now() - this.openedAt : 0);
  }
}

const current = new AsyncLocalStorage<WaitClock>();

/** Runs `work` with a fresh clock; everything it awaits through `waitOn` is counted. */
export async function measureWaits<T>(work: () => Promise<T>): Promise<{ result: T; wallMs: number; waitMs: number }> {
  const clock = new WaitClock();
  const started = performance.now();
  const result = await current.run(clock, work);
  return { result, wallMs: performance.now() - started, waitMs: clock.waitedMs };
}

/** Marks `work` as waiting on something outside the bot; a no-op outside `measureWaits`. */
export function waitOn<T>(work: () => Promise<T>): Promise<T> {
  const clock = current.getStore();
  return clock ? clock.around(work) : work();
}
