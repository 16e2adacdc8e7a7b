import type { Processor } from 'bullmq';
import { systemClock, type Clock } from '../time/clock.ts';
import { withDeadline } from '../time/deadline.ts';

/** The part of a BullMQ `Worker` that shutting down needs. */
export interface ClosableWorker {
  /** With `true`, stops taking jobs without waiting for the active ones. */
  pause(doNotWaitActive?: boolean): Promise<void>;
  /** With `force`, closes without waiting: active jobs keep their lock until it lapses. */
  close(force?: boolean): Promise<void>;
}

/** Counts the processors that are running, so shutdown can wait for exactly those. */
export class ActiveJobs {
  #count = 0;
  #waiters: (() => void)[] = [];

  get count(): number {
    return this.#count;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    this.#count += 1;
    try {
      return await work();
    } finally {
      this.#count -= 1;
      if (this.#count === 0) for (const wake of this.#waiters.splice(0)) wake();
    }
  }

  /** The same processor, counted while it runs. */
  wrap(processor: Processor): Processor {
    return (job, token, signal) => this.run(() => processor(job, token, signal));
  }

  /** Resolves once no processor runs. */
  idle(): Promise<void> {
    return this.#count === 0 ? Promise.resolve() : new Promise((resolve) => this.#waiters.push(resolve));
  }
}

export interface CloseWorkersOptions {
  /** How long the running jobs may take to finish, in ms. */
  graceMs: number;
  /** The processors of these workers. */
  active: ActiveJobs;
  /** Upper bound of the final `close()` once no job runs, in ms; default 5000. */
  closeTimeoutMs?: number;
  /** The clock both bounds run on; default the system's. */
  clock?: Pick<Clock, 'sleep'>;
}

/**
 * Stops taking jobs, lets the running ones finish for up to `graceMs`, then closes the
 * workers, by force when the grace ran out. A forced job is not lost: its lock in
 * Redis lapses and a replica resumes it, looking at each node before it acts.
 *
 * The wait is on the processors rather than on `worker.close()`: BullMQ's close cannot
 * be forced once started, and its wait on the blocking connection can hang after a
 * Redis reconnect even with no job running.
 */
export async function closeWorkers(workers: ClosableWorker[], options: CloseWorkersOptions): Promise<{ forced: boolean }> {
  await Promise.all(workers.map((w) => w.pause(true)));
  const clock = options.clock ?? systemClock;
  const drained = await withDeadline(clock, options.graceMs, () => options.active.idle());
  if (!drained.ok) {
    await Promise.all(workers.map((w) => w.close(true)));
    return { forced: true };
  }
  // No processor runs: close() only waits for the last results to be written.
  await withDeadline(clock, options.closeTimeoutMs ?? 5000, () => Promise.all(workers.map((w) => w.close())));
  return { forced: false };
}
