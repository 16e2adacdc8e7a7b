/** How `talosctl` finds its talosconfig, resolved for an invocation the simulator answers. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** The path talosctl would use: the last `--talosconfig`, then `TALOSCONFIG`, then `~/.talos/config`. */
export function talosconfigPath(argv: readonly string[], env: { TALOSCONFIG?: string; HOME: string }): string {
  let flag: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') break;
    if (arg === '--talosconfig') flag = argv[++i] ?? '';
    else if (arg.startsWith('--talosconfig=')) flag = arg.slice('--talosconfig='.length);
  }
  return flag ?? env.TALOSCONFIG ?? `${env.HOME}/.talos/config`;
}

/** Reads it as the CLI process would (relative to its cwd), with talosctl's wording when it cannot. */
export function readTalosconfig(path: string, cwd: string): { path: string; contents?: string; error?: string } {
  try {
    return { path, contents: readFileSync(resolve(cwd, path), 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file or directory' : code === 'EACCES' ? 'permission denied' : String(code);
    return { path, error: `failed to open config file ${JSON.stringify(path)}: open ${path}: ${reason}` };
  }
}
