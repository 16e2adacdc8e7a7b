import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChatMessage } from '../../src/chat/chat-port.ts';
import { throttledUpdate } from '../../jobs/playbooks/shared/throttled-update.ts';

const text = (t: string): ChatMessage => ({ text: t });

describe('throttledUpdate', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends at most one edit per interval, always the newest state, and the final state on close', async () => {
    // Arrange
    const sent: string[] = [];
    const editor = throttledUpdate((m) => Promise.resolve(void sent.push(m.text)), 2000, () => undefined);

    // Act: a burst of lines within the first interval, then more after it
    for (let i = 1; i <= 50; i += 1) editor.set(text(`line ${i}`));
    await vi.advanceTimersByTimeAsync(2000);
    editor.set(text('line 51'));
    await vi.advanceTimersByTimeAsync(500);
    editor.set(text('line 52'));
    await editor.close(text('done'));

    // Assert
    expect(sent).toEqual(['line 50', 'done']);
  });

  it('keeps going after a failed edit and reports it', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const editor = throttledUpdate(
      () => {
        calls += 1;
        return calls === 1 ? Promise.reject(new Error('ratelimited')) : Promise.resolve();
      },
      2000,
      (error) => errors.push(error),
    );

    editor.set(text('a'));
    await vi.advanceTimersByTimeAsync(2000);
    await editor.close(text('b'));

    expect(calls).toBe(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['ratelimited']);
  });
});
