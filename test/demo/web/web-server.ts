/**
 * The browser demo's HTTP server, on 127.0.0.1 only: the page and its script, each reader's page
 * state, a server-sent event stream that says when anything changed, and the few things a person
 * does in Slack (a slash command, a click, a modal's submit or close, opening the Home tab), each
 * handed to the Slack emulator exactly as its tests hand them. The bot behind it is the real one.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { z } from 'zod';
import { readRawBody } from '../../slack-emulator/request-body.ts';
import type { DeliveryResult, SlackEmulator } from '../../slack-emulator/index.ts';
import type { Simulator } from '../../sim/index.ts';
import { applyBreak, BREAKS, breakTargets } from './cluster-controls.ts';
import { pageState } from './page-state.ts';

/** A person the page can act as, with what the inventory lets them do. */
export interface DemoUser {
  id: string;
  name: string;
  role: string;
}

export interface DemoChannel {
  id: string;
  name: string;
}

export interface WebServerOptions {
  slack: SlackEmulator;
  sim: Simulator;
  users: DemoUser[];
  channels: DemoChannel[];
  /** Port on 127.0.0.1; 0 (default) takes a free one. */
  port?: number;
  /** How often the server looks for changes to announce, in ms. Default 150. */
  pollMs?: number;
}

export interface WebServer {
  url: string;
  close(): Promise<void>;
}

const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'page.html', type: 'text/html; charset=utf-8' },
  '/client.js': { file: 'client.js', type: 'text/javascript; charset=utf-8' },
  '/page.css': { file: 'page.css', type: 'text/css; charset=utf-8' },
};

/** Bodies are a few fields; anything larger is not from the page. */
const MAX_BODY_BYTES = 64 * 1024;

class BadRequest extends Error {}

export async function startWebServer(options: WebServerOptions): Promise<WebServer> {
  const { slack, sim } = options;
  const userIds = options.users.map((u) => u.id) as [string, ...string[]];
  const channelIds = options.channels.map((c) => c.id) as [string, ...string[]];
  const User = z.enum(userIds);
  const Channel = z.enum(channelIds);
  const Ts = z.string().regex(/^\d+\.\d{6}$/);
  const schemas = {
    command: z.object({ user: User, channel: Channel, text: z.string().max(2000) }),
    click: z.object({
      user: User,
      surface: z.enum(['message', 'view', 'home']),
      channel: Channel.optional(),
      ts: Ts.optional(),
      viewId: z.string().max(100).optional(),
      actionId: z.string().min(1).max(255),
      blockId: z.string().max(255).optional(),
      value: z.string().max(2000).optional(),
      ticks: z.record(z.string(), z.array(z.string())).optional(),
    }),
    submit: z.object({
      user: User,
      viewId: z.string().max(100),
      values: z.record(z.string(), z.union([z.string(), z.array(z.string()), z.null()])),
    }),
    close: z.object({ user: User, viewId: z.string().max(100) }),
    home: z.object({ user: User }),
    break: z.object({
      cluster: z.string().max(63),
      kind: z.enum([...(Object.keys(BREAKS) as (keyof typeof BREAKS)[]), 'clear']),
      target: z.string().max(253).optional(),
    }),
  };

  /** Bumped by what the server itself changes (a fault), so every page hears of it. */
  let local = 0;
  const fingerprint = (): string =>
    [
      slack.apiCalls.length,
      slack.responseUrlCalls.length,
      slack.acks.length,
      slack.modals().filter((m) => m.open).length,
      slack.modals().length,
      sim.events.length,
      local,
    ].join('.');

  const streams = new Set<ServerResponse>();
  let last = fingerprint();
  const poll = setInterval(() => {
    const now = fingerprint();
    if (now === last) return;
    last = now;
    for (const res of streams) res.write(`event: change\ndata: ${now}\n\n`);
  }, options.pollMs ?? 150);

  const acked = (result: DeliveryResult): { ok: boolean; error?: string } =>
    result.timedOut ? { ok: false, error: `the bot did not answer in time (${result.reason})` } : { ok: true };

  const actions: Record<string, (body: unknown) => Promise<unknown>> = {
    async command(body) {
      const { user, channel, text } = schemas.command.parse(body);
      const typed = text.trim();
      const match = /^\/talos(?:\s+([\s\S]*))?$/.exec(typed);
      if (match === null) throw new BadRequest('Only /talos commands reach the bot here: type /talos help');
      return acked(await slack.sendSlashCommand({ user, channel, text: (match[1] ?? '').trim() }));
    },
    async click(body) {
      const input = schemas.click.parse(body);
      const common = { user: input.user, actionId: input.actionId, blockId: input.blockId, value: input.value };
      if (input.surface === 'view') {
        if (input.viewId === undefined) throw new BadRequest('a click in a modal names its view');
        return acked(await slack.clickInView({ ...common, viewId: input.viewId }));
      }
      if (input.surface === 'home') return acked(await slack.clickInHome(common));
      if (input.channel === undefined || input.ts === undefined) throw new BadRequest('a click on a message names its channel and ts');
      return acked(await slack.clickButton({ ...common, channel: input.channel, messageTs: input.ts, ticks: input.ticks }));
    },
    async submit(body) {
      const { user, viewId, values } = schemas.submit.parse(body);
      const result = await slack.submitView(user, viewId, values);
      return { ok: true, outcome: result.outcome, errors: result.errors };
    },
    async close(body) {
      const { user, viewId } = schemas.close.parse(body);
      await slack.closeView(user, viewId);
      return { ok: true };
    },
    async home(body) {
      const { user } = schemas.home.parse(body);
      return acked(await slack.openHome(user));
    },
    async break(body) {
      const message = applyBreak(sim, schemas.break.parse(body));
      local += 1;
      return { ok: true, message };
    },
  };

  const setup = (): unknown => ({
    users: options.users,
    channels: options.channels,
    breaks: BREAKS,
    clusters: Object.fromEntries(Object.keys(sim.state.clusters).map((name) => [name, breakTargets(sim, name)])),
  });

  const send = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const asset = ASSETS[url.pathname];
    if (req.method === 'GET' && asset !== undefined) {
      res.writeHead(200, {
        'content-type': asset.type,
        'cache-control': 'no-store',
        // The page runs only its own script: a message that slipped past escaping could run nothing.
        'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:",
      });
      res.end(await readFile(join(import.meta.dirname, asset.file)));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/setup') return send(res, 200, setup());
    if (req.method === 'GET' && url.pathname === '/api/state') {
      const user = User.safeParse(url.searchParams.get('user'));
      const channel = Channel.safeParse(url.searchParams.get('channel'));
      if (!user.success || !channel.success) return send(res, 400, { ok: false, error: 'choose a known user and channel' });
      const thread = Ts.safeParse(url.searchParams.get('thread'));
      return send(
        res,
        200,
        pageState(slack, sim, { user: user.data, channel: channel.data, thread: thread.success ? thread.data : undefined }),
      );
    }
    if (req.method === 'GET' && url.pathname === '/api/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
      res.write(`event: change\ndata: ${last}\n\n`);
      streams.add(res);
      req.once('close', () => streams.delete(res));
      return;
    }
    const action = req.method === 'POST' && url.pathname.startsWith('/api/') ? actions[url.pathname.slice(5)] : undefined;
    if (action === undefined) return send(res, 404, { ok: false, error: `no ${req.method} ${url.pathname}` });
    const raw = await readRawBody(req);
    if (raw.length > MAX_BODY_BYTES) return send(res, 413, { ok: false, error: 'request too large' });
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return send(res, 400, { ok: false, error: 'the body is not JSON' });
    }
    try {
      send(res, 200, await action(body));
    } catch (error) {
      if (error instanceof z.ZodError)
        return send(res, 400, { ok: false, error: error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
      // The emulator's own refusals (no open modal, no such button) are what the person did wrong.
      send(res, 400, { ok: false, error: error instanceof Error ? error.message : String(error) });
    }
  }

  const server: Server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { ok: false, error: error instanceof Error ? error.message : String(error) });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    async close() {
      clearInterval(poll);
      for (const res of streams) res.end();
      streams.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
