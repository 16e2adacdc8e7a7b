import { describe, expect, it } from 'vitest';
import { pollUntil, type Clock } from '../../../src/time/clock.ts';

/** A clock that moves only when the code under test sleeps. */
function steppedClock(): Clock & { sleeps: number[] } {
  let t = Date.parse('2026-01-01T00:00:00Z');
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => new Date(t),
    sleep: (ms) => {
      sleeps.push(ms);
      t += ms;
      return Promise.resolve();
    },
  };
}

describe('pollUntil', () => {
  it('returns the value of the first look that is done, sleeping the interval between looks', async () => {
    const clock = steppedClock();
    const outcome = await pollUntil(clock, { timeoutMs: 10_000, intervalMs: 1000 }, (attempt) =>
      Promise.resolve(attempt < 3 ? { done: false as const, pending: `look ${attempt}` } : { done: true as const, value: 'back' }),
    );
    expect(outcome).toEqual({ ok: true, value: 'back', elapsedMs: 2000 });
    expect(clock.sleeps).toEqual([1000, 1000]);
  });

  it('ends at the bound with what the last look still saw pending', async () => {
    const clock = steppedClock();
    const pending: string[] = [];
    const outcome = await pollUntil(clock, { timeoutMs: 3000, intervalMs: 1000, onPending: (p) => void pending.push(p) }, (attempt) =>
      Promise.resolve({ done: false as const, pending: `look ${attempt}` }),
    );
    expect(outcome).toEqual({ ok: false, pending: 'look 4', elapsedMs: 3000 });
    expect(pending).toEqual(['look 1', 'look 2', 'look 3']);
  });

  it('looks once even with a zero bound', async () => {
    let looks = 0;
    const outcome = await pollUntil(steppedClock(), { timeoutMs: 0, intervalMs: 1000 }, () => {
      looks++;
      return Promise.resolve({ done: false as const, pending: 'not yet' });
    });
    expect(looks).toBe(1);
    expect(outcome.ok).toBe(false);
  });

  it('rejects once its signal is aborted, without looking again', async () => {
    const controller = new AbortController();
    let looks = 0;
    const waiting = pollUntil(steppedClock(), { timeoutMs: 10_000, intervalMs: 1000, signal: controller.signal }, () => {
      looks++;
      controller.abort(new Error('cancelled'));
      return Promise.resolve({ done: false as const, pending: 'not yet' });
    });
    await expect(waiting).rejects.toThrow('cancelled');
    expect(looks).toBe(1);
  });
});
