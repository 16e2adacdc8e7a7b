import type { ChatMessage } from '../../../src/chat/chat-port.ts';

export interface ThrottledUpdate {
  /** The newest state; sent at once, or when the interval since the last edit has passed. */
  set(message: ChatMessage): void;
  /** Sends the final state now and waits for every edit to land. */
  close(message: ChatMessage): Promise<void>;
}

/**
 * Coalesces a stream of states of one message into at most one edit per interval, so a
 * command printing hundreds of lines costs a handful of Slack calls. The last state always lands.
 *
 * @param intervalMs minimum time between two edits, in ms
 * @param onError a failed edit is reported here and skipped: progress is best effort, the audit trail is not
 */
export function throttledUpdate(send: (message: ChatMessage) => Promise<void>, intervalMs: number, onError: (error: unknown) => void): ThrottledUpdate {
  // Created right after the message was posted: that post counts as the last edit.
  let lastAt = Date.now();
  let pending: ChatMessage | undefined;
  let timer: NodeJS.Timeout | undefined;
  let chain: Promise<void> = Promise.resolve();
  const flush = (): void => {
    if (pending === undefined) return;
    const message = pending;
    pending = undefined;
    lastAt = Date.now();
    chain = chain.then(() => send(message)).catch(onError);
  };
  return {
    set(message) {
      pending = message;
      if (timer !== undefined) return;
      const wait = lastAt + intervalMs - Date.now();
      if (wait <= 0) {
        flush();
        return;
      }
      timer = setTimeout(() => {
        timer = undefined;
        flush();
      }, wait);
    },
    async close(message) {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      pending = message;
      flush();
      await chain;
    },
  };
}
