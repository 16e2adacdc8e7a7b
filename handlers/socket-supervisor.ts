import { ConfigError } from '../src/config/config-error.ts';
import type { Logger } from '../src/log/logger.ts';
import { systemClock, type Clock } from '../src/time/clock.ts';
import { withDeadline } from '../src/time/deadline.ts';

/**
 * Keeps the Socket Mode connection up for as long as the process runs.
 *
 * Why the bot supervises it instead of the SDK (@slack/socket-mode, src/SocketModeClient.ts at
 * tag @slack/socket-mode@3.0.0, and the installed 3.1.0 build): its own reconnect treats an
 * `apps.connections.open` that fails with an HTTP error or no answer (`WebAPIHTTPError`,
 * `WebAPIRequestError`), once the WebClient's retries are spent, as unrecoverable; the reconnect
 * promise (`delayReconnectAttempt(this.start)`) has no handler, so that failure becomes an
 * unhandled rejection and no attempt ever follows. So the receiver runs with
 * `autoReconnectEnabled: false` (a documented option; the client then settles in its documented
 * `disconnected` state), the client's WebClient makes a single attempt per call, and this loop
 * retries `start()` with backoff, forever.
 */

/** The part of the Socket Mode client the supervisor uses: its public lifecycle. */
export interface SocketModeLifecycle {
  /** Resolves once Slack said `hello`; rejects when the attempt failed. */
  start(): Promise<unknown>;
  disconnect(): Promise<void>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}

/** Why a connection ended: Slack's `disconnect` reason, or `closed` when the socket went without one. */
export type DisconnectReason = 'warning' | 'refresh_requested' | 'link_disabled' | 'too_many_websockets' | 'closed' | 'other';

export interface SocketSupervisorOptions {
  client: SocketModeLifecycle;
  /** One connection attempt: the first goes through Bolt's `app.start()` (it also opens the HTTP port), later ones through the client. */
  connect: (attempt: number) => Promise<unknown>;
  logger: Logger;
  /** The first wait after a failed attempt, in ms; doubled after each further failure. Default 1000. */
  minDelayMs?: number;
  /** The longest wait between two attempts, in ms. Default 30 000. */
  maxDelayMs?: number;
  /** An attempt that has not connected within this many ms is ended and counted as failed. Default 30 000. */
  attemptTimeoutMs?: number;
  /** A connection that lasted less than this, in ms, ended as a failure does: the next attempt waits. Default 10 000. */
  stableMs?: number;
  onDisconnect?: (reason: DisconnectReason) => void;
  onConnectFailure?: (error: string) => void;
  onConnectedChange?: (connected: boolean) => void;
  /** In [0, 1); spreads the waits of several replicas. Default Math.random. */
  random?: () => number;
  /** The clock the attempts' bound runs on; default the system's. */
  clock?: Pick<Clock, 'sleep'>;
}

/** Slack's answers to `apps.connections.open` that no retry fixes: the app token is wrong or its workspace is gone. */
const TOKEN_ERRORS = new Set(['not_authed', 'invalid_auth', 'account_inactive', 'user_removed_from_team', 'team_disabled']);
/** Disconnect reasons that are not routine: reconnecting at once would meet the same answer. */
const TROUBLE: ReadonlySet<DisconnectReason> = new Set(['link_disabled', 'too_many_websockets']);
const REASONS: ReadonlySet<string> = new Set(['warning', 'refresh_requested', 'link_disabled', 'too_many_websockets']);

/** What an operator is told about a disconnect reason. */
const REASON_HINTS: Partial<Record<DisconnectReason, string>> = {
  link_disabled: 'Socket Mode is turned off for this Slack app: turn it on again in the app settings (Socket Mode); the bot keeps trying',
  too_many_websockets:
    'the app has more Socket Mode connections than Slack allows (10): look for extra replicas or old processes with the same app token',
};

/** A short, stable name for why an attempt failed: the Web API error code, or the Slack error. */
export function connectError(error: unknown): string {
  const e = error as { code?: unknown; data?: { error?: unknown }; statusCode?: unknown } | undefined;
  if (e?.code === 'slack_webapi_platform_error' && typeof e.data?.error === 'string') return e.data.error;
  if (e?.code === 'slack_webapi_http_error') return typeof e.statusCode === 'number' ? `http_${e.statusCode}` : 'http_error';
  if (e?.code === 'slack_webapi_request_error') return 'unreachable';
  if (e?.code === 'slack_socketmode_websocket_error') return 'websocket';
  if (e === undefined) return 'closed';
  return 'other';
}

export class SocketSupervisor {
  readonly #o: Required<Omit<SocketSupervisorOptions, 'onDisconnect' | 'onConnectFailure' | 'onConnectedChange'>> & SocketSupervisorOptions;
  #connected = false;
  #stopping = false;
  #attempts = 0;
  #failures = 0;
  #reason: DisconnectReason | undefined;
  #ended: PromiseWithResolvers<void> | undefined;
  #wake: PromiseWithResolvers<void> | undefined;

  constructor(options: SocketSupervisorOptions) {
    this.#o = {
      minDelayMs: 1000,
      maxDelayMs: 30_000,
      attemptTimeoutMs: 30_000,
      stableMs: 10_000,
      random: Math.random,
      clock: systemClock,
      ...options,
    };
    const { client } = options;
    client.on('connected', () => this.#setConnected(true));
    for (const state of ['disconnecting', 'reconnecting']) client.on(state, () => this.#setConnected(false));
    client.on('disconnected', () => {
      this.#setConnected(false);
      this.#ended?.resolve();
    });
    // Read only, for the log and the metric: the client closes the socket on every `disconnect` frame itself.
    client.on('ws_message', (data: unknown) => {
      const reason = disconnectReason(data);
      if (reason !== undefined) this.#reason = reason;
    });
  }

  /** The WebSocket is open and Slack said hello. */
  connected(): boolean {
    return this.#connected && !this.#stopping;
  }

  /**
   * Makes the first attempt. Resolves once it connected, or once it failed for a reason that may
   * pass (Slack away: the loop goes on trying in the background, and the bot runs its jobs
   * meanwhile). Rejects only when Slack refused the app token, which no retry fixes.
   */
  start(): Promise<void> {
    const first = Promise.withResolvers<void>();
    this.#run(first).catch((error: unknown) => {
      // Not expected: every attempt's failure is caught inside. Said loudly, since nothing reconnects after it.
      this.#o.logger.error({ err: (error as Error).message }, 'slack socket supervisor stopped unexpectedly; restart the bot');
      first.resolve();
    });
    return first.promise;
  }

  /**
   * Stops reconnecting and closes the connection. An attempt still fetching its URL may open a
   * socket after this (socket-mode 3.1.0 does not abort it): the loop closes that one when the
   * attempt settles, so stopping never waits on Slack.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.resolve();
    this.#ended?.resolve();
    await this.#o.client.disconnect().catch(() => undefined);
  }

  async #run(first: PromiseWithResolvers<void>): Promise<void> {
    const { logger } = this.#o;
    while (!this.#stopping) {
      const attempt = ++this.#attempts;
      this.#reason = undefined;
      this.#ended = undefined;
      let connectedAt: number | undefined;
      try {
        await this.#attempt(attempt);
        connectedAt = Date.now();
        if (attempt > 1) logger.info({ attempt, failedAttempts: this.#failures }, 'slack socket connected again');
        first.resolve();
        // Waits for this connection's end; one that is already gone (a close right after hello) ends at once.
        this.#ended = Promise.withResolvers<void>();
        if (this.#connected && !this.#stopping) await this.#ended.promise;
      } catch (error) {
        const code = connectError(error);
        if (attempt === 1 && TOKEN_ERRORS.has(code)) {
          first.reject(
            new ConfigError('SLACK_APP_TOKEN', [
              `Slack refused the app-level token (${code}): give the xapp- token of this app, with the connections:write scope`,
            ]),
          );
          return;
        }
        if (this.#stopping) break;
        this.#o.onConnectFailure?.(code);
        this.#failures += 1;
        const level = TOKEN_ERRORS.has(code) ? 'error' : 'warn';
        logger[level](
          { attempt, failedAttempts: this.#failures, error: code },
          'slack socket cannot connect; operations in flight carry on, commands wait until it is back',
        );
        first.resolve();
      }
      if (this.#stopping) break;
      if (connectedAt !== undefined) {
        const reason = this.#reason ?? 'closed';
        this.#o.onDisconnect?.(reason);
        const lasted = Date.now() - connectedAt;
        const routine = !TROUBLE.has(reason) && lasted >= this.#o.stableMs;
        this.#failures = routine ? 0 : this.#failures + 1;
        const hint = REASON_HINTS[reason];
        logger[hint === undefined ? 'warn' : 'error'](
          { reason, connectedMs: lasted, ...(hint ? { hint } : {}) },
          'slack socket disconnected; reconnecting',
        );
      }
      await this.#pause(this.#delay());
    }
    // An attempt that connected after stop() began: close what it opened.
    if (this.#connected) await this.#o.client.disconnect().catch(() => undefined);
    this.#setConnected(false);
  }

  /** One attempt, bounded: a handshake that never completes is ended, so the loop goes on. */
  async #attempt(attempt: number): Promise<void> {
    // The attempt may still settle after its deadline; nobody waits on it then.
    const outcome = await withDeadline(this.#o.clock, this.#o.attemptTimeoutMs, () => this.#o.connect(attempt));
    if (!outcome.ok) {
      void this.#o.client.disconnect().catch(() => undefined);
      throw new Error('no hello within the attempt timeout');
    }
  }

  /** No wait after a routine reconnect; then doubling from `minDelayMs` up to `maxDelayMs`, each wait between half and all of it. */
  #delay(): number {
    if (this.#failures === 0) return 0;
    const full = Math.min(this.#o.maxDelayMs, this.#o.minDelayMs * 2 ** (this.#failures - 1));
    return Math.round(full / 2 + (full / 2) * this.#o.random());
  }

  async #pause(ms: number): Promise<void> {
    if (ms <= 0) return;
    this.#wake = Promise.withResolvers<void>();
    const timer = setTimeout(() => this.#wake?.resolve(), ms);
    await this.#wake.promise;
    clearTimeout(timer);
  }

  #setConnected(connected: boolean): void {
    if (this.#connected === connected) return;
    this.#connected = connected;
    this.#o.onConnectedChange?.(connected);
  }
}

function disconnectReason(data: unknown): DisconnectReason | undefined {
  const text = typeof data === 'string' ? data : data instanceof ArrayBuffer ? new TextDecoder().decode(data) : undefined;
  if (text === undefined || !text.includes('"disconnect"')) return undefined;
  try {
    const frame = JSON.parse(text) as { type?: unknown; reason?: unknown };
    if (frame.type !== 'disconnect') return undefined;
    return typeof frame.reason === 'string' && REASONS.has(frame.reason) ? (frame.reason as DisconnectReason) : 'other';
  } catch {
    return undefined;
  }
}
