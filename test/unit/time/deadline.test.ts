import { describe, expect, it } from 'vitest';
import type { Clock } from '../../../src/time/clock.ts';
import { DeadlineExceeded, withDeadline } from '../../../src/time/deadline.ts';

/** A clock whose sleeps end only when the test moves it on; a sleep whose signal aborts rejects and is forgotten. */
function manualClock(): Pick<Clock, 'sleep'> & { advance(ms: number): void; sleeping(): number } {
  let t = 0;
  let sleeps: { until: number; resolve: () => void }[] = [];
  return {
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        const entry = { until: t + ms, resolve };
        sleeps.push(entry);
        signal?.addEventListener(
          'abort',
          () => {
            sleeps = sleeps.filter((s) => s !== entry);
            reject(signal.reason as Error);
          },
          { once: true },
        );
      }),
    advance(ms) {
      t += ms;
      const due = sleeps.filter((s) => s.until <= t);
      sleeps = sleeps.filter((s) => s.until > t);
      for (const s of due) s.resolve();
    },
    sleeping: () => sleeps.length,
  };
}

/** Lets every promise callback queued so far run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('withDeadline', () => {
  it("returns the work's value when it answers before the deadline, and leaves no sleep behind", async () => {
    // Arrange
    const clock = manualClock();

    // Act
    const outcome = await withDeadline(clock, 1000, () => Promise.resolve('answer'));

    // Assert
    expect(outcome).toEqual({ ok: true, value: 'answer' });
    expect(clock.sleeping()).toBe(0);
  });

  it('ends at the deadline even when the work ignores its signal, and aborts that signal', async () => {
    // Arrange
    const clock = manualClock();
    let seen: AbortSignal | undefined;
    let ended: unknown;
    const bounded = withDeadline(clock, 1000, (signal) => {
      seen = signal;
      return new Promise<string>(() => undefined);
    }).then((outcome) => (ended = outcome));
    await settle();

    // Act: just short of the deadline, then past it
    clock.advance(999);
    await settle();
    const before = ended;
    clock.advance(1);
    await bounded;

    // Assert
    expect(before).toBeUndefined();
    expect(ended).toEqual({ ok: false });
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(DeadlineExceeded);
  });

  it("throws the work's own error as it is", async () => {
    const clock = manualClock();
    const failure = new Error('connection refused');

    await expect(withDeadline(clock, 1000, () => Promise.reject(failure))).rejects.toBe(failure);
    expect(clock.sleeping()).toBe(0);
  });

  it("rejects with a cancel's reason at once, and aborts the work's signal with it", async () => {
    // Arrange
    const clock = manualClock();
    const cancel = new AbortController();
    let seen: AbortSignal | undefined;
    const bounded = withDeadline(
      clock,
      1000,
      (signal) => {
        seen = signal;
        return new Promise<string>(() => undefined);
      },
      { signal: cancel.signal },
    );
    await settle();

    // Act
    cancel.abort(new Error('operation cancelled'));

    // Assert
    await expect(bounded).rejects.toThrow('operation cancelled');
    expect(seen?.reason).toEqual(new Error('operation cancelled'));
    expect(clock.sleeping()).toBe(0);
  });

  it('does not start the work when the cancel came first', async () => {
    const clock = manualClock();
    let started = false;
    const cancel = new AbortController();
    cancel.abort(new Error('operation cancelled'));

    await expect(
      withDeadline(
        clock,
        1000,
        () => {
          started = true;
          return Promise.resolve(1);
        },
        { signal: cancel.signal },
      ),
    ).rejects.toThrow('operation cancelled');
    expect(started).toBe(false);
  });

  it('keeps the first outcome: a work that answers after its deadline changes nothing', async () => {
    // Arrange
    const clock = manualClock();
    let answer: (value: string) => void = () => undefined;
    const bounded = withDeadline(clock, 50, () => new Promise<string>((resolve) => (answer = resolve)));
    await settle();

    // Act
    clock.advance(50);
    const outcome = await bounded;
    answer('late');
    await settle();

    // Assert
    expect(outcome).toEqual({ ok: false });
  });
});
