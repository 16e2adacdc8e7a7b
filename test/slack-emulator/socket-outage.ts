/**
 * Slack's Socket Mode endpoint away for a while: `apps.connections.open` fails and no WebSocket
 * can be opened, until the outage ends (after `forMs`, or when the test ends it).
 *
 * What the client sees, as @slack/web-api 8.2.0 (dist/WebClient.js, `makeRequest`) turns it into errors:
 * - `http_503`: an HTTP 503 answer; every non-200, non-429 status becomes a `WebAPIHTTPError`;
 * - `unreachable`: the connection closes without an answer, as a refused, reset or dropped
 *   connection reaches fetch; that becomes a `WebAPIRequestError`.
 * @slack/socket-mode (src/SocketModeClient.ts `retrieveWSSURL`, tag @slack/socket-mode@3.0.0, and
 * the installed 3.1.0) treats both as unrecoverable once the WebClient's retries are spent.
 * Notes: test/sim/reference/slack-socket-mode.md.
 */

export type OutageKind = 'http_503' | 'unreachable';

export interface OutageOptions {
  /** How the failure reaches the client. Default `http_503`. */
  how?: OutageKind;
  /** Ends by itself after this many ms (real time); lasts until `end()` when omitted. */
  forMs?: number;
  /** Cut the open sockets when the outage starts, without a close frame (as a lost link). Default true. */
  dropSockets?: boolean;
}

/** A running (or ended) outage; its counters are what the bot tried while Slack was away. */
export interface SocketOutage {
  readonly how: OutageKind;
  /** `apps.connections.open` calls failed by this outage. */
  readonly failedOpens: number;
  /** WebSocket upgrades refused by this outage (a URL issued before it began). */
  readonly refusedUpgrades: number;
  readonly startedAt: number;
  /** When it ended (epoch ms); undefined while it lasts. */
  readonly endedAt: number | undefined;
  /** Resolves when the outage is over. */
  readonly over: Promise<void>;
  end(): void;
}

export class Outage implements SocketOutage {
  readonly how: OutageKind;
  readonly startedAt = Date.now();
  failedOpens = 0;
  refusedUpgrades = 0;
  endedAt: number | undefined;
  readonly #over = Promise.withResolvers<void>();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: OutageOptions) {
    this.how = options.how ?? 'http_503';
    if (options.forMs !== undefined) this.#endAt(this.startedAt + options.forMs);
  }

  // A timer may fire a millisecond before the wall clock says its delay has passed: an outage lasts at least what was asked.
  #endAt(deadline: number): void {
    this.#timer = setTimeout(() => {
      if (Date.now() < deadline) this.#endAt(deadline);
      else this.end();
    }, deadline - Date.now());
    this.#timer.unref();
  }

  get over(): Promise<void> {
    return this.#over.promise;
  }

  get active(): boolean {
    return this.endedAt === undefined;
  }

  end(): void {
    if (this.endedAt !== undefined) return;
    clearTimeout(this.#timer);
    this.endedAt = Date.now();
    this.#over.resolve();
  }
}
