import type { IncomingMessage, ServerResponse } from 'node:http';
import { acceptedScope, refuseBotCall } from './access.ts';
import type { ApiDeps, MethodSpec } from './api-context.ts';
import type { Faults } from './faults.ts';
import { chatMethods } from './methods-chat.ts';
import { fileMethods } from './methods-files.ts';
import { readMethods } from './methods-read.ts';
import { viewMethods } from './methods-views.ts';
import type { Recorder } from './recorder.ts';
import type { Outage } from './socket-outage.ts';
import { parseApiArgs, readRawBody } from './request-body.ts';
import type { JsonObject } from './types.ts';

const METHODS: Record<string, MethodSpec> = { ...chatMethods, ...readMethods, ...fileMethods, ...viewMethods };

const STATUS_TEXT: Record<number, string> = { 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable' };

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
  json?: JsonObject;
}

/** `POST /api/:method`: authentication, fault injection, recording and dispatch. */
export class WebApi {
  readonly #deps: ApiDeps;
  readonly #recorder: Recorder;
  readonly #faults: Faults;
  readonly #outage: () => Outage | undefined;

  constructor(deps: ApiDeps, recorder: Recorder, faults: Faults, outage: () => Outage | undefined = () => undefined) {
    this.#deps = deps;
    this.#recorder = recorder;
    this.#faults = faults;
    this.#outage = outage;
  }

  async handle(req: IncomingMessage, res: ServerResponse, method: string, url: URL): Promise<void> {
    const raw = await readRawBody(req);
    const rawBody = raw.toString('utf8');
    this.#recorder.traffic(rawBody);
    const at = Date.now();
    let args: JsonObject;
    try {
      args = await parseApiArgs(raw, req.headers['content-type'], url.searchParams);
    } catch {
      return this.#send(res, { method, args: {}, at, rawBody }, json(200, { ok: false, error: 'invalid_json' }));
    }
    const outage = method === 'apps.connections.open' ? this.#outage() : undefined;
    if (outage !== undefined) {
      outage.failedOpens += 1;
      if (outage.how === 'http_503')
        return this.#send(
          res,
          { method, args, at, rawBody },
          { status: 503, headers: { 'content-type': 'text/plain' }, body: STATUS_TEXT[503]! },
        );
      // No answer at all: the client's fetch fails as on a refused or reset connection.
      this.#recorder.apiCalls.push({ method, args, at, rawBody, status: 0 });
      req.socket.destroy();
      return;
    }
    const fault = await this.#faults.intercept(method, args);
    if (fault?.kind === 'rate_limit') {
      const reply = json(429, { ok: false, error: 'ratelimited' });
      reply.headers['retry-after'] = String(fault.retryAfterSec);
      return this.#send(res, { method, args, at, rawBody }, reply);
    }
    if (fault?.kind === 'server_error') {
      if (fault.afterWrite) this.#dispatch(method, args, bearer(req));
      const text = STATUS_TEXT[fault.status] ?? 'Server Error';
      return this.#send(
        res,
        { method, args, at, rawBody },
        { status: fault.status, headers: { 'content-type': 'text/plain' }, body: text },
      );
    }
    if (fault?.kind === 'held_answer') {
      const reply = this.#dispatch(method, args, bearer(req));
      await fault.gate.pass(method);
      return this.#send(res, { method, args, at, rawBody }, reply);
    }
    if (fault?.kind === 'lost_answer') {
      this.#dispatch(method, args, bearer(req));
      // Recorded with status 0: no answer left. A held answer ends when the client gives up (or the emulator closes).
      this.#recorder.apiCalls.push({ method, args, at, rawBody, status: 0 });
      if (fault.how === 'cut') req.socket.destroy();
      return;
    }
    return this.#send(res, { method, args, at, rawBody }, this.#dispatch(method, args, bearer(req)));
  }

  #dispatch(method: string, args: JsonObject, headerToken: string | undefined): Reply {
    const spec = METHODS[method];
    if (spec === undefined) return json(200, { ok: false, error: 'unknown_method', req_method: method });
    const token = headerToken ?? (typeof args.token === 'string' ? args.token : undefined);
    if (token === undefined || token === '') return json(200, { ok: false, error: 'not_authed' });
    const kind = this.#tokenKind(token);
    if (kind === undefined) return json(200, { ok: false, error: 'invalid_auth' });
    if (kind !== spec.token) return json(200, { ok: false, error: 'not_allowed_token_type' });
    if (kind === 'app') return json(200, spec.handle(args, this.#deps));
    const { directory, config } = this.#deps;
    const refusal = refuseBotCall(method, args, { directory, scopes: config.scopes });
    const reply = json(200, refusal ?? spec.handle(args, this.#deps));
    // As Slack does: the token's scopes, and the scope this method accepts, on every bot-token answer.
    reply.headers['x-oauth-scopes'] = [...config.scopes].join(',');
    const accepted = acceptedScope(method, args, directory);
    if (accepted !== undefined) reply.headers['x-accepted-oauth-scopes'] = accepted;
    return reply;
  }

  #tokenKind(token: string): 'bot' | 'app' | undefined {
    if (token === this.#deps.config.botToken) return 'bot';
    if (token === this.#deps.config.appToken) return 'app';
    return undefined;
  }

  #send(res: ServerResponse, call: { method: string; args: JsonObject; at: number; rawBody: string }, reply: Reply): void {
    const ok = reply.json?.ok;
    const error = reply.json?.error;
    this.#recorder.apiCalls.push({
      ...call,
      status: reply.status,
      ...(typeof ok === 'boolean' ? { ok } : {}),
      ...(typeof error === 'string' ? { error } : {}),
    });
    res.writeHead(reply.status, reply.headers).end(reply.body);
  }
}

function json(status: number, body: JsonObject): Reply {
  return { status, headers: { 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify(body), json: body };
}

function bearer(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}
