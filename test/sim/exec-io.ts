/** The streams of one fake CLI invocation, as the control endpoint relays them to the process. */

export interface ExecIO {
  out(text: string): void;
  err(text: string): void;
  /** Aborted when the CLI process goes away (killed, or its connection dropped). */
  readonly signal: AbortSignal;
  /**
   * Reads one line from the CLI process's stdin, as an interactive prompt does: undefined at end of
   * input. It waits as long as the caller keeps stdin open without writing. Absent where the
   * transport carries no stdin, which reads as end of input.
   */
  readLine?(): Promise<string | undefined>;
}

/** The CLI process is gone; the command stops where it is, like a killed client. */
export class ClientGone extends Error {
  constructor() {
    super('client disconnected');
  }
}

export function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new ClientGone());
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new ClientGone());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A probe that never answers: resolves only by the client going away. */
export function never(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(new ClientGone());
    signal.addEventListener('abort', () => reject(new ClientGone()), { once: true });
  });
}
