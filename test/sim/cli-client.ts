/**
 * The body of the fake `talosctl` and `tofu` executables: forwards argv, cwd and (for talosctl)
 * the talosconfig to the simulator and replays the streamed output. Node built-ins only, so the
 * process starts fast.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { homedir } from 'node:os';
import { resolve } from 'node:path';

/** The talosconfig path talosctl would use: the last `--talosconfig`, then `TALOSCONFIG`, then `~/.talos/config`. */
function talosconfigPath(argv: string[]): string {
  let flag: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') break;
    if (arg === '--talosconfig') flag = argv[++i] ?? '';
    else if (arg.startsWith('--talosconfig=')) flag = arg.slice('--talosconfig='.length);
  }
  return flag ?? process.env['TALOSCONFIG'] ?? `${homedir()}/.talos/config`;
}

function readTalosconfig(argv: string[]): { path: string; contents?: string; error?: string } {
  const path = talosconfigPath(argv);
  const absolute = resolve(process.cwd(), path);
  try {
    return { path, contents: readFileSync(absolute, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file or directory' : code === 'EACCES' ? 'permission denied' : String(code);
    return { path, error: `failed to open config file ${JSON.stringify(path)}: open ${path}: ${reason}` };
  }
}

export function runCli(bin: 'talosctl' | 'tofu'): void {
  const url = process.env['TALOS_SIM_URL'];
  if (!url) {
    process.stderr.write(`${bin}: TALOS_SIM_URL is not set; run this through the simulator's wrapper\n`);
    process.exitCode = 1;
    return;
  }
  const argv = process.argv.slice(2);
  const body = JSON.stringify({
    bin,
    argv,
    cwd: process.cwd(),
    ...(bin === 'talosctl' ? { clientVersion: process.env['TALOS_SIM_CLIENT_VERSION'], talosconfig: readTalosconfig(argv) } : {}),
  });
  let exit: number | undefined;
  const req = request(`${url}/exec`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
    let pending = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      pending += chunk;
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line) {
          const message = JSON.parse(line) as { fd?: 1 | 2; text?: string; exit?: number };
          if (message.exit !== undefined) exit = message.exit;
          else (message.fd === 2 ? process.stderr : process.stdout).write(message.text ?? '');
        }
        newline = pending.indexOf('\n');
      }
    });
    res.on('end', () => {
      if (exit === undefined) process.stderr.write(`${bin}: the simulator closed the connection\n`);
      process.exitCode = exit ?? 1;
    });
  });
  req.on('error', (error) => {
    process.stderr.write(`${bin}: cannot reach the simulator at ${url}: ${error.message}\n`);
    process.exitCode = 1;
  });
  req.end(body);
}
