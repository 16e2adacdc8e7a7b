import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import type { EmulatorConfig } from './config.ts';
import type { Recorder } from './recorder.ts';
import type { AckTimeoutReason, DeliveryResult, EnvelopeType, JsonObject } from './types.ts';
import { Outage, type OutageOptions, type SocketOutage } from './socket-outage.ts';
import { waitFor } from './wait-for.ts';

/** Slack allows an app ten simultaneous Socket Mode connections. */
const MAX_CONNECTIONS = 10;
/** How long close() lets a client finish the close handshake before cutting the socket. */
const CLOSE_GRACE_MS = 250;
/**
 * After a `disconnect` frame Slack closes the connection itself: a client that ignores the frame
 * loses the socket anyway. How long it is left open (Slack's own grace is not documented).
 */
const DISCONNECT_GRACE_MS = 1000;

export type DisconnectReason = 'warning' | 'refresh_requested' | 'link_disabled' | 'too_many_websockets';

export interface DeliverOptions {
  acceptsResponsePayload: boolean;
  /** events_api only. */
  retryAttempt?: number;
  retryReason?: string;
}

interface Connection {
  id: number;
  ws: WebSocket;
}

interface PendingEnvelope {
  type: EnvelopeType;
  sentAt: number;
  connectionId: number;
  timer: NodeJS.Timeout;
  resolve: (result: DeliveryResult) => void;
}

/** The Socket Mode side of Slack: tickets, the `/link/` WebSocket, envelopes and acks. */
export class SocketModeHub {
  readonly #config: EmulatorConfig;
  readonly #recorder: Recorder;
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #tickets = new Set<string>();
  readonly #pending = new Map<string, PendingEnvelope>();
  readonly #expired = new Map<string, { type: EnvelopeType; sentAt: number }>();
  #connections: Connection[] = [];
  #nextConnectionId = 1;
  #roundRobin = 0;
  #acksToDrop = 0;
  #outage: Outage | undefined;

  constructor(config: EmulatorConfig, recorder: Recorder) {
    this.#config = config;
    this.#recorder = recorder;
  }

  /** Answer of `apps.connections.open`: a one-use URL, like Slack's ticketed `wss://` URL. */
  issueUrl(origin: string): string {
    const ticket = randomUUID();
    this.#tickets.add(ticket);
    const wsOrigin = origin.replace(/^http/, 'ws');
    return `${wsOrigin}/link/?ticket=${ticket}&app_id=${this.#config.appId}`;
  }

  /** The outage in force, if any: `apps.connections.open` fails while it lasts. */
  get outage(): Outage | undefined {
    return this.#outage?.active === true ? this.#outage : undefined;
  }

  /** Socket Mode becomes unreachable (see {@link Outage}); the open sockets are cut unless told otherwise. */
  startOutage(options: OutageOptions = {}): SocketOutage {
    this.#outage?.end();
    const outage = new Outage(options);
    this.#outage = outage;
    if (options.dropSockets ?? true) this.dropAllConnections();
    return outage;
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const outage = this.outage;
    if (outage !== undefined) {
      // The link host is away too: the connection is cut, with no HTTP answer.
      outage.refusedUpgrades += 1;
      socket.destroy();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://emulator.invalid');
    const ticket = url.searchParams.get('ticket') ?? '';
    if (url.pathname !== '/link/' || !this.#tickets.delete(ticket)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws));
  }

  deliver(type: EnvelopeType, payload: JsonObject, opts: DeliverOptions): Promise<DeliveryResult> {
    const envelopeId = randomUUID();
    const connection = this.#pickConnection();
    if (connection === undefined) {
      this.#recordTimeout(envelopeId, type, 'no_connection');
      return Promise.resolve({ timedOut: true, envelopeId, reason: 'no_connection' });
    }
    const envelope: JsonObject = { envelope_id: envelopeId, type, payload, accepts_response_payload: opts.acceptsResponsePayload };
    if (type === 'events_api') {
      envelope.retry_attempt = opts.retryAttempt ?? 0;
      envelope.retry_reason = opts.retryReason ?? '';
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.#expire(envelopeId, 'no_ack'), this.#config.ackTimeoutMs);
      this.#pending.set(envelopeId, { type, sentAt: performance.now(), connectionId: connection.id, timer, resolve });
      this.#send(connection, envelope);
    });
  }

  connectionCount(): number {
    return this.#openConnections().length;
  }

  /** Envelopes sent and neither acked nor timed out yet. */
  unackedCount(): number {
    return this.#pending.size;
  }

  async waitForConnections(n: number, timeoutMs = 10_000): Promise<void> {
    await waitFor(() => this.connectionCount() >= n, { timeoutMs, description: `${n} Socket Mode connection(s)` });
  }

  /**
   * Sends Slack's `disconnect` frame. @slack/socket-mode (src/SocketModeClient.ts, `onWebSocketMessage`,
   * tag @slack/socket-mode@3.0.0) closes the socket on every reason alike; what happens next is the
   * client's to decide (test/sim/reference/slack-socket-mode.md).
   */
  disconnectAll(reason: DisconnectReason = 'refresh_requested'): void {
    for (const connection of this.#openConnections()) this.#sendDisconnect(connection, reason);
  }

  /** Cuts every socket without a close frame, as a network failure would. */
  dropAllConnections(): void {
    for (const connection of this.#connections) connection.ws.terminate();
    this.#connections = [];
  }

  /** The next `n` acks are swallowed, so their envelopes time out. */
  dropNextAcks(n: number): void {
    this.#acksToDrop += n;
  }

  /**
   * Closes every socket with a close frame, so a bot that was just stopped finishes its own
   * close handshake quietly, then terminates whatever is left after a short grace period.
   */
  async close(): Promise<void> {
    for (const envelopeId of this.#pending.keys()) this.#expire(envelopeId, 'closed');
    await Promise.all([...this.#wss.clients].map((ws) => closeSocket(ws)));
    this.#connections = [];
    this.#wss.close();
  }

  #accept(ws: WebSocket): void {
    const connection: Connection = { id: this.#nextConnectionId++, ws };
    ws.on('message', (data, isBinary) => this.#onFrame(connection, data, isBinary));
    ws.on('close', () => {
      this.#connections = this.#connections.filter((c) => c !== connection);
    });
    ws.on('error', () => ws.terminate());
    if (this.connectionCount() >= MAX_CONNECTIONS) {
      this.#sendDisconnect(connection, 'too_many_websockets');
      return;
    }
    this.#connections.push(connection);
    this.#send(connection, {
      type: 'hello',
      num_connections: this.connectionCount(),
      connection_info: { app_id: this.#config.appId },
      debug_info: { host: `applink-${connection.id}`, build_number: 54, approximate_connection_time: 3600 },
    });
  }

  #onFrame(connection: Connection, data: RawData, isBinary: boolean): void {
    const text = rawDataToString(data);
    this.#recorder.socketFrames.push({ connectionId: connection.id, direction: 'in', data: text, at: Date.now() });
    this.#recorder.traffic(text);
    if (isBinary) return;
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof frame !== 'object' || frame === null) return;
    const { envelope_id: envelopeId, payload } = frame as { envelope_id?: unknown; payload?: unknown };
    if (typeof envelopeId !== 'string') return;
    const ackPayload = typeof payload === 'object' && payload !== null ? (payload as JsonObject) : {};
    this.#onAck(connection, envelopeId, ackPayload);
  }

  #onAck(connection: Connection, envelopeId: string, payload: JsonObject): void {
    if (this.#acksToDrop > 0) {
      this.#acksToDrop -= 1;
      return;
    }
    const pending = this.#pending.get(envelopeId);
    if (pending === undefined) {
      const expired = this.#expired.get(envelopeId);
      if (expired !== undefined) {
        const ackedInMs = performance.now() - expired.sentAt;
        this.#recorder.acks.push({ envelopeId, type: expired.type, payload, ackedInMs, transport: 'socket', late: true });
      }
      return;
    }
    clearTimeout(pending.timer);
    this.#pending.delete(envelopeId);
    const ackedInMs = performance.now() - pending.sentAt;
    this.#recorder.acks.push({ envelopeId, type: pending.type, payload, ackedInMs, transport: 'socket', late: false });
    pending.resolve({ timedOut: false, envelopeId, payload, ackedInMs, connectionId: connection.id });
  }

  #expire(envelopeId: string, reason: AckTimeoutReason): void {
    const pending = this.#pending.get(envelopeId);
    if (pending === undefined) return;
    clearTimeout(pending.timer);
    this.#pending.delete(envelopeId);
    this.#expired.set(envelopeId, { type: pending.type, sentAt: pending.sentAt });
    this.#recordTimeout(envelopeId, pending.type, reason);
    pending.resolve({ timedOut: true, envelopeId, reason });
  }

  #recordTimeout(envelopeId: string, type: EnvelopeType, reason: AckTimeoutReason): void {
    this.#recorder.ackTimeouts.push({ envelopeId, type, reason, at: Date.now() });
  }

  /** Each envelope goes to exactly one connection, rotating like Slack's "eventually 50:50". */
  #pickConnection(): Connection | undefined {
    const open = this.#openConnections();
    if (open.length === 0) return undefined;
    const connection = open[this.#roundRobin % open.length];
    this.#roundRobin += 1;
    return connection;
  }

  #openConnections(): Connection[] {
    return this.#connections.filter((c) => c.ws.readyState === c.ws.OPEN);
  }

  #sendDisconnect(connection: Connection, reason: DisconnectReason): void {
    this.#send(connection, { type: 'disconnect', reason, debug_info: { host: `applink-${connection.id}` } });
    // Slack does not wait for the client to go: the socket closes after a grace, whatever the client does.
    setTimeout(() => {
      if (connection.ws.readyState === connection.ws.OPEN) connection.ws.close(1000, reason);
      setTimeout(() => connection.ws.terminate(), CLOSE_GRACE_MS).unref();
    }, DISCONNECT_GRACE_MS).unref();
  }

  #send(connection: Connection, frame: JsonObject): void {
    const data = JSON.stringify(frame);
    this.#recorder.socketFrames.push({ connectionId: connection.id, direction: 'out', data, at: Date.now() });
    connection.ws.send(data);
  }
}

function closeSocket(ws: WebSocket): Promise<void> {
  return new Promise((resolve) => {
    if (ws.readyState === ws.CLOSED) {
      resolve();
      return;
    }
    const timer = setTimeout(() => {
      ws.terminate();
      resolve();
    }, CLOSE_GRACE_MS);
    ws.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    if (ws.readyState === ws.OPEN) ws.close(1001, 'going away');
  });
}

function rawDataToString(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
