/**
 * The endpoint the fake executables call: one POST per invocation, answered with an NDJSON stream
 * of output chunks (`{"fd":1,"text":…}`) and a final `{"exit":N}`. When the CLI process dies the
 * connection closes and the command is aborted where it stands.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ClientGone, type ExecIO } from './exec-io.ts';
import { runTalosctl, type TalosctlRequest } from './talosctl/index.ts';
import type { SimDeps } from './talosctl/session.ts';
import { runTofu } from './tofu.ts';
import { DEFAULT_CLIENT_VERSION } from './versions.ts';

export interface ExecRequest {
  bin: 'talosctl' | 'tofu';
  argv: string[];
  cwd: string;
  clientVersion?: string;
  talosconfig?: TalosctlRequest['talosconfig'];
}

async function readJson(req: IncomingMessage): Promise<ExecRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExecRequest;
}

export async function startControlServer(deps: SimDeps): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/exec') {
      res.writeHead(404).end();
      return;
    }
    void (async () => {
      const request = await readJson(req);
      const controller = new AbortController();
      res.on('close', () => {
        if (!res.writableEnded) controller.abort();
      });
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      const write = (fd: 1 | 2, text: string): void => {
        if (!res.writableEnded && !res.destroyed) res.write(`${JSON.stringify({ fd, text })}\n`);
      };
      const io: ExecIO = { out: (t) => write(1, t), err: (t) => write(2, t), signal: controller.signal };
      const clientVersion = request.bin === 'talosctl' ? (request.clientVersion ?? DEFAULT_CLIENT_VERSION) : undefined;
      const call = deps.recorder.startCall(request.bin, request.argv, request.cwd, clientVersion);
      let code: number | null;
      try {
        code =
          request.bin === 'talosctl'
            ? await runTalosctl(
                { argv: request.argv, cwd: request.cwd, clientVersion: clientVersion ?? DEFAULT_CLIENT_VERSION, talosconfig: request.talosconfig ?? { path: '' } },
                io,
                deps,
                call,
              )
            : await runTofu({ argv: request.argv, cwd: request.cwd }, io, deps.state, call);
      } catch (error) {
        if (error instanceof ClientGone) code = null;
        else {
          io.err(`simulator failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
          code = 1;
        }
      }
      call.endedAt = Date.now();
      call.exitCode = controller.signal.aborted ? null : code;
      if (code !== null && !res.destroyed) res.end(`${JSON.stringify({ exit: code })}\n`);
    })().catch(() => {
      res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
