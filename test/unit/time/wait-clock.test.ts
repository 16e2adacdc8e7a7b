import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { measureWaits, waitOn, WaitClock } from '../../../src/time/wait-clock.ts';

/**
 * The clock reads `performance.now()`; with it faked, durations are exact and the tests
 * assert arithmetic, never how fast the machine is.
 */
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});

afterEach(() => {
  vi.useRealTimers();
});

/** Work that takes `ms` of (fake) time. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `measureWaits(work)` to completion while advancing fake time. */
async function measured<T>(work: () => Promise<T>): Promise<{ result: T; wallMs: number; waitMs: number }> {
  const pending = measureWaits(work);
  await vi.runAllTimersAsync();
  return pending;
}

describe('measureWaits and waitOn', () => {
  it("counts a wait and leaves the rest as the bot's own time", async () => {
    // Act
    const { result, wallMs, waitMs } = await measured(async () => {
      await sleep(30); // the bot's own work
      await waitOn(() => sleep(100));
      return 'done';
    });

    // Assert
    expect(result).toBe('done');
    expect(wallMs).toBe(130);
    expect(waitMs).toBe(100);
  });

  it('adds up waits one after another', async () => {
    // Act
    const { waitMs, wallMs } = await measured(async () => {
      await waitOn(() => sleep(100));
      await sleep(50);
      await waitOn(() => sleep(200));
    });

    // Assert
    expect(waitMs).toBe(300);
    expect(wallMs).toBe(350);
  });

  it('counts a wait nested in another once', async () => {
    // Act
    const { waitMs } = await measured(() =>
      waitOn(async () => {
        await sleep(20);
        await waitOn(() => sleep(50));
        await sleep(30);
      }),
    );

    // Assert
    expect(waitMs).toBe(100);
  });

  it('counts concurrent waits once, for as long as any is open', async () => {
    // Act: three probes at once, open 0–100, 0–250 and 50–150.
    const { waitMs, wallMs } = await measured(async () => {
      await Promise.all([waitOn(() => sleep(100)), waitOn(() => sleep(250)), sleep(50).then(() => waitOn(() => sleep(100)))]);
      await sleep(40);
    });

    // Assert
    expect(waitMs).toBe(250);
    expect(wallMs).toBe(290);
  });

  it('counts a wait that fails, and passes its error on', async () => {
    // Act
    const outcome = measureWaits(async () => {
      await waitOn(() => sleep(60));
      await waitOn(async () => {
        await sleep(40);
        throw new Error('talosctl failed');
      }).catch((error: unknown) => (error as Error).message);
      return 'caught';
    });
    await vi.runAllTimersAsync();
    const { result, waitMs } = await outcome;

    // Assert
    expect(result).toBe('caught');
    expect(waitMs).toBe(100);
  });

  it('keeps the clocks of two measured steps apart', async () => {
    // Act
    const both = Promise.all([measureWaits(() => waitOn(() => sleep(100))), measureWaits(() => sleep(100))]);
    await vi.runAllTimersAsync();
    const [waiting, working] = await both;

    // Assert
    expect(waiting.waitMs).toBe(100);
    expect(working.waitMs).toBe(0);
  });

  it('is a plain call outside measureWaits', async () => {
    // Act
    const pending = waitOn(async () => {
      await sleep(100);
      return 42;
    });
    await vi.runAllTimersAsync();
    const value = await pending;
    const after = await measured(() => sleep(10));

    // Assert
    expect(value).toBe(42);
    expect(after.waitMs).toBe(0);
  });
});

describe('WaitClock', () => {
  it('includes a wait that is still open', async () => {
    // Arrange
    const clock = new WaitClock();
    const open = clock.around(() => sleep(100));

    // Act
    await vi.advanceTimersByTimeAsync(40);
    const midway = clock.waitedMs;
    await vi.advanceTimersByTimeAsync(60);
    await open;

    // Assert
    expect(midway).toBe(40);
    expect(clock.waitedMs).toBe(100);
  });
});
