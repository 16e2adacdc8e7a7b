/**
 * The endpoint the fake executables call: one POST per invocation, answered with an NDJSON stream
 * of output chunks (`{"fd":1,"text":…}`) and a final `{"exit":N}`. When the CLI process dies the
 * connection closes and the command is aborted where it stands.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { ClientGone, type ExecIO } from './exec-io.ts';
import { readTalosconfig, talosconfigPath } from './talosconfig-file.ts';
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

/** Runs one invocation against the simulated estate; null when the client went away mid-command. */
async function runExec(request: ExecRequest, io: ExecIO, deps: SimDeps, aborted: () => boolean): Promise<number | null> {
  const clientVersion = request.bin === 'talosctl' ? (request.clientVersion ?? DEFAULT_CLIENT_VERSION) : undefined;
  const call = deps.recorder.startCall(request.bin, request.argv, request.cwd, clientVersion);
  let code: number | null;
  try {
    code =
      request.bin === 'talosctl'
        ? await runTalosctl(
            {
              argv: request.argv,
              cwd: request.cwd,
              clientVersion: clientVersion ?? DEFAULT_CLIENT_VERSION,
              talosconfig: request.talosconfig ?? { path: '' },
            },
            io,
            deps,
            call,
          )
        : await runTofu({ argv: request.argv, cwd: request.cwd }, io, deps.state, call, deps);
  } catch (error) {
    if (error instanceof ClientGone) code = null;
    else {
      io.err(`simulator failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      code = 1;
    }
  }
  call.endedAt = Date.now();
  call.exitCode = aborted() ? null : code;
  return code;
}

/**
 * The wire of the fake executables, small enough for a shell script (a Go `talosctl` starts in
 * milliseconds; a Node.js client would not): the request is NUL-separated fields (`v1`, bin,
 * cwd, client version, whether TALOSCONFIG is set, its value, HOME, argc, argv...); the answer
 * is lines `o<text>`/`e<text>` (a line of stdout/stderr), `O`/`E` (a part without newline),
 * `r` (read a line of stdin and send it back as `a<line>`, or `z` at end of input) and `x<code>`.
 * A closed socket is a killed client.
 */
function serveLine(socket: Socket, deps: SimDeps): void {
  let buffered = Buffer.alloc(0);
  let started = false;
  const controller = new AbortController();
  let finished = false;
  // After the request, the client sends only stdin answers: `a<line>` or `z` (end of input).
  let answers = '';
  const waiting: ((line: string | undefined) => void)[] = [];
  socket.on('close', () => {
    if (!finished) controller.abort();
  });
  socket.on('error', () => undefined);
  socket.on('data', (chunk: Buffer) => {
    if (started) {
      answers += chunk.toString('utf8');
      const lines = answers.split('\n');
      answers = lines.pop()!;
      for (const line of lines) waiting.shift()?.(line.startsWith('a') ? line.slice(1) : undefined);
      return;
    }
    buffered = Buffer.concat([buffered, chunk]);
    const fields = buffered.toString('utf8').split('\0');
    fields.pop(); // the part after the last NUL is incomplete
    if (fields.length < 8) return;
    const argc = Number(fields[7]);
    if (fields.length < 8 + argc) return;
    started = true;
    const [, bin, cwd, clientVersion, talosconfigSet, talosconfigEnv, home] = fields as [
      string,
      'talosctl' | 'tofu',
      string,
      string,
      string,
      string,
      string,
    ];
    const argv = fields.slice(8, 8 + argc);
    const request: ExecRequest = {
      bin,
      argv,
      cwd,
      ...(bin === 'talosctl'
        ? {
            clientVersion: clientVersion || undefined,
            talosconfig: readTalosconfig(
              talosconfigPath(argv, { HOME: home, ...(talosconfigSet === 'set' ? { TALOSCONFIG: talosconfigEnv } : {}) }),
              cwd,
            ),
          }
        : {}),
    };
    const pending: Record<'o' | 'e', string> = { o: '', e: '' };
    const write = (kind: 'o' | 'e', text: string): void => {
      if (socket.destroyed) return;
      pending[kind] += text;
      const lines = pending[kind].split('\n');
      pending[kind] = lines.pop()!;
      if (lines.length > 0) socket.write(lines.map((l) => `${kind}${l}\n`).join(''));
    };
    const flushPartial = (): string => {
      const tail = (['o', 'e'] as const)
        .filter((k) => pending[k] !== '')
        .map((k) => `${k.toUpperCase()}${pending[k]}\n`)
        .join('');
      pending.o = '';
      pending.e = '';
      return tail;
    };
    const readLine = (): Promise<string | undefined> =>
      new Promise((resolve) => {
        if (socket.destroyed) {
          resolve(undefined);
          return;
        }
        // A prompt ends without a newline; the client prints it before it reads.
        waiting.push(resolve);
        socket.write(`${flushPartial()}r\n`);
      });
    const io: ExecIO = { out: (t) => write('o', t), err: (t) => write('e', t), signal: controller.signal, readLine };
    void runExec(request, io, deps, () => controller.signal.aborted).then((code) => {
      finished = true;
      if (code === null || socket.destroyed) return;
      socket.end(`${flushPartial()}x${code}\n`);
    });
  });
}

export interface ControlServer {
  server: Server;
  url: string;
  /** Port of the line protocol the executables speak. */
  linePort: number;
  /** Closes the line protocol's listener and drops the clients still connected (hung commands). */
  closeLine(): Promise<void>;
}

export async function startControlServer(deps: SimDeps): Promise<ControlServer> {
  const sockets = new Set<Socket>();
  const lineServer = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serveLine(socket, deps);
  });
  await new Promise<void>((resolve) => lineServer.listen(0, '127.0.0.1', resolve));
  const closeLine = (): Promise<void> =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      lineServer.close(() => resolve());
    });
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
      const code = await runExec(request, io, deps, () => controller.signal.aborted);
      if (code !== null && !res.destroyed) res.end(`${JSON.stringify({ exit: code })}\n`);
    })().catch(() => {
      res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    linePort: (lineServer.address() as AddressInfo).port,
    closeLine,
  };
}
