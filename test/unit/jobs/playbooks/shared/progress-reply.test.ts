import { describe, expect, it } from 'vitest';
import type { ChatMessage, ChatPort } from '../../../../../src/port/chat-port.ts';
import type { Clock } from '../../../../../src/time/clock.ts';
import { startProgressReply } from '../../../../../jobs/playbooks/shared/progress-reply.ts';

/** A clock that moves only when the test steps it; a sleep ends once the clock has passed its end. */
function steppedClock(): Clock & { step(ms: number): Promise<void> } {
  let t = Date.parse('2026-01-01T00:00:00Z');
  let sleepers: { until: number; wake: () => void }[] = [];
  return {
    now: () => new Date(t),
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        const sleeper = { until: t + ms, wake: resolve };
        sleepers.push(sleeper);
        signal?.addEventListener('abort', () => {
          sleepers = sleepers.filter((s) => s !== sleeper);
          reject(signal.reason);
        });
      }),
    async step(ms) {
      t += ms;
      const due = sleepers.filter((s) => s.until <= t);
      sleepers = sleepers.filter((s) => s.until > t);
      for (const s of due) s.wake();
      // Let the woken timers and the edits they start settle.
      for (let i = 0; i < 10; i += 1) await Promise.resolve();
    },
  };
}

/** Records every reply and edit as `post <text>` / `edit <text>`; `failing` makes those calls reject. */
function recordingChat(failing: { post?: boolean; edits?: number[] } = {}): {
  chat: ChatPort;
  calls: string[];
  keys: (string | undefined)[];
} {
  const calls: string[] = [];
  const keys: (string | undefined)[] = [];
  let edits = 0;
  const chat = {
    reply: (_channel: string, _thread: string, message: ChatMessage, options?: { key?: string }) => {
      calls.push(`post ${message.text}`);
      keys.push(options?.key);
      return failing.post === true ? Promise.reject(new Error('post failed')) : Promise.resolve({ ts: '1.0001' });
    },
    update: (_channel: string, ts: string, message: ChatMessage) => {
      edits += 1;
      calls.push(`edit ${ts} ${message.text}`);
      return failing.edits?.includes(edits) === true ? Promise.reject(new Error('ratelimited')) : Promise.resolve();
    },
  } as unknown as ChatPort;
  return { chat, calls, keys };
}

const place = { channel: 'C1', rootTs: '1.0000' };
const render = (state: string): ChatMessage => ({ text: state });

describe('startProgressReply', () => {
  it('posts once, then edits at most once per interval with the newest state, and sends the final state at once', async () => {
    // Arrange
    const clock = steppedClock();
    const { chat, calls, keys } = recordingChat();
    const reply = startProgressReply({ chat, clock }, place, { key: 'op-progress', render, minIntervalMs: 2000, onError: () => undefined });

    // Act: a burst of lines within the first interval, one more after it, one just before the end
    await reply.open('line 0');
    for (let i = 1; i <= 50; i += 1) reply.update(`line ${i}`);
    await clock.step(1999);
    const beforeInterval = [...calls];
    await clock.step(1);
    reply.update('line 51');
    await clock.step(500);
    reply.update('line 52');
    await reply.finish('done');

    // Assert
    expect(beforeInterval).toEqual(['post line 0']);
    expect(calls).toEqual(['post line 0', 'edit 1.0001 line 50', 'edit 1.0001 done']);
    expect(keys).toEqual(['op-progress']);
  });

  it('edits at once when the interval since the last edit has already passed', async () => {
    const clock = steppedClock();
    const { chat, calls } = recordingChat();
    const reply = startProgressReply({ chat, clock }, place, { key: 'k', render, minIntervalMs: 2000, onError: () => undefined });

    await reply.open('start');
    await clock.step(5000);
    reply.update('late line');
    await clock.step(0);

    expect(calls).toEqual(['post start', 'edit 1.0001 late line']);
    await reply.finish('done');
    expect(calls.at(-1)).toBe('edit 1.0001 done');
  });

  it('keeps going after a failed edit and reports it, and the final edit still lands', async () => {
    const clock = steppedClock();
    const errors: string[] = [];
    const { chat, calls } = recordingChat({ edits: [1] });
    const reply = startProgressReply({ chat, clock }, place, {
      key: 'k',
      render,
      minIntervalMs: 2000,
      onError: (e) => errors.push((e as Error).message),
    });

    await reply.open('start');
    reply.update('a');
    await clock.step(2000);
    await reply.finish('b');

    expect(calls).toEqual(['post start', 'edit 1.0001 a', 'edit 1.0001 b']);
    expect(errors).toEqual(['ratelimited']);
  });

  it('posts at the first update when not opened, and edits in a newer state that came in while the post was on its way', async () => {
    const clock = steppedClock();
    const { chat, calls } = recordingChat();
    const reply = startProgressReply({ chat, clock }, place, { key: 'k', render, minIntervalMs: 2000, onError: () => undefined });

    reply.update('pulling');
    reply.update('installing');
    await clock.step(0);
    const afterPost = [...calls];
    await clock.step(2000);
    await reply.finish('done');

    expect(afterPost).toEqual(['post pulling']);
    expect(calls).toEqual(['post pulling', 'edit 1.0001 installing', 'edit 1.0001 done']);
  });

  it('does not edit in a state that shows what the post already shows', async () => {
    const clock = steppedClock();
    const { chat, calls } = recordingChat();
    const reply = startProgressReply({ chat, clock }, place, { key: 'k', render, minIntervalMs: 2000, onError: () => undefined });

    reply.update('waiting');
    reply.update('waiting');
    await clock.step(5000);

    expect(calls).toEqual(['post waiting']);
    await reply.finish('done');
    expect(calls).toEqual(['post waiting', 'edit 1.0001 done']);
  });

  it('sends nothing at the end when nothing was posted, and a failed best-effort post is reported, never thrown', async () => {
    const clock = steppedClock();
    const quiet = recordingChat();
    await startProgressReply({ chat: quiet.chat, clock }, place, {
      key: 'k',
      render,
      minIntervalMs: 2000,
      onError: () => undefined,
    }).finish('done');
    expect(quiet.calls).toEqual([]);

    const errors: string[] = [];
    const failing = recordingChat({ post: true });
    const reply = startProgressReply({ chat: failing.chat, clock }, place, {
      key: 'k',
      render,
      minIntervalMs: 2000,
      onError: (e) => errors.push((e as Error).message),
    });
    reply.update('pulling');
    reply.update('installing');
    await clock.step(3000);
    await reply.finish('done');

    expect(failing.calls).toEqual(['post pulling']);
    expect(errors).toEqual(['post failed']);
  });

  it('rejects open when its post fails, so the step that needs the reply stops', async () => {
    const { chat } = recordingChat({ post: true });
    const reply = startProgressReply({ chat, clock: steppedClock() }, place, {
      key: 'k',
      render,
      minIntervalMs: 2000,
      onError: () => undefined,
    });

    await expect(reply.open('start')).rejects.toThrow('post failed');
  });
});
