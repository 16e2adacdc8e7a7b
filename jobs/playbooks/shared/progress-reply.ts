import type { ChatMessage, ChatPort } from '../../../src/port/chat-port.ts';
import type { Clock } from '../../../src/time/clock.ts';

/** Where a progress reply goes, and how it is drawn and paced. */
export interface ProgressReplyOptions<S> {
  /** The reply's idempotency key: a run that posts again with the same key edits nothing twice. */
  key: string;
  /** The message for one state of the work. */
  render: (state: S) => ChatMessage;
  /** Minimum time between two edits, in ms; the post counts as the first. */
  minIntervalMs: number;
  /** A failed edit (or a failed post through `update`) is reported here and skipped: progress is best effort, the audit trail is not. */
  onError: (error: unknown) => void;
}

/** One reply that shows a long command's progress as it happens. */
export interface ProgressReply<S> {
  /** Posts the reply now, with the first state; rejects when the post fails. */
  open(state: S): Promise<void>;
  /**
   * The newest state. The first one posts the reply when `open` was not called (best effort); later
   * ones edit it at once, or when the interval since the last edit has passed, always with the newest state.
   */
  update(state: S): void;
  /** Sends the last state at once, when the reply was posted, and waits for every post and edit to land. */
  finish(state: S): Promise<void>;
}

/**
 * Coalesces a stream of states into one posted reply and at most one edit of it per interval, so a
 * command printing hundreds of lines costs a handful of Slack calls; the last state always lands.
 * The interval is measured on the injected clock and its timer is the clock's sleep.
 */
export function startProgressReply<S>(
  deps: { chat: ChatPort; clock: Clock },
  place: { channel: string; rootTs: string },
  options: ProgressReplyOptions<S>,
): ProgressReply<S> {
  const { chat, clock } = deps;
  const at = (): number => clock.now().getTime();
  let ts: string | undefined;
  let posting: Promise<void> | undefined;
  let pending: S | undefined;
  let lastAt = 0;
  let timer: AbortController | undefined;
  let chain: Promise<void> = Promise.resolve();

  const flush = (): void => {
    if (pending === undefined || ts === undefined) return;
    const message = options.render(pending);
    const to = ts;
    pending = undefined;
    lastAt = at();
    chain = chain.then(() => chat.update(place.channel, to, message)).catch(options.onError);
  };
  const schedule = (): void => {
    if (timer !== undefined) return;
    const wait = lastAt + options.minIntervalMs - at();
    if (wait <= 0) {
      flush();
      return;
    }
    const controller = new AbortController();
    timer = controller;
    clock.sleep(wait, controller.signal).then(
      () => {
        timer = undefined;
        flush();
      },
      // Cancelled by `finish`, which sends the last state itself.
      () => undefined,
    );
  };
  const post = async (state: S): Promise<void> => {
    ({ ts } = await chat.reply(place.channel, place.rootTs, options.render(state), { key: options.key }));
    // The post counts as the last edit; a state that came in meanwhile is edited in unless it shows the same.
    lastAt = at();
    if (pending !== undefined && JSON.stringify(options.render(pending)) !== JSON.stringify(options.render(state))) schedule();
    else pending = undefined;
  };

  return {
    open(state) {
      posting = post(state);
      return posting;
    },
    update(state) {
      pending = state;
      if (ts !== undefined) {
        schedule();
        return;
      }
      if (posting !== undefined) return;
      pending = undefined;
      posting = post(state).catch(options.onError);
    },
    async finish(state) {
      await posting?.catch(() => undefined);
      timer?.abort();
      timer = undefined;
      if (ts !== undefined) {
        pending = state;
        flush();
      }
      await chain;
    },
  };
}
