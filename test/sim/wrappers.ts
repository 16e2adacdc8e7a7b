/** Writes the executables the bot runs: `bin/talosctl`, `bin/tofu` and `bin/talosctl-versions/talosctl-<v>`. */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLIENT_VERSIONS, DEFAULT_CLIENT_VERSION } from './versions.ts';

export interface WrapperPaths {
  talosctl: string;
  tofu: string;
  /** Directory of `talosctl-<version>` executables, one per shipped client. */
  talosctlVersions: string;
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The simulator's address travels inside the wrapper, not through the caller's environment: the
 * bot runs these with an explicit env and never passes simulator variables through.
 */
function script(controlUrl: string, cli: string, clientVersion: string | undefined, cacheDir: string): string {
  const env = [
    `TALOS_SIM_URL=${shellQuote(controlUrl)}`,
    ...(clientVersion ? [`TALOS_SIM_CLIENT_VERSION=${shellQuote(clientVersion)}`] : []),
    // Caches the type-stripped CLI between invocations: roughly halves each process start.
    `NODE_COMPILE_CACHE=${shellQuote(cacheDir)}`,
  ];
  return `#!/bin/sh\n${env.join(' ')} exec ${shellQuote(process.execPath)} --no-warnings ${shellQuote(cli)} "$@"\n`;
}

async function writeExecutable(path: string, content: string): Promise<void> {
  await writeFile(path, content, { mode: 0o755 });
  await chmod(path, 0o755);
}

export async function writeWrappers(binDir: string, controlUrl: string): Promise<WrapperPaths> {
  const talosctlCli = fileURLToPath(new URL('./talosctl-cli.ts', import.meta.url));
  const tofuCli = fileURLToPath(new URL('./tofu-cli.ts', import.meta.url));
  const versionsDir = join(binDir, 'talosctl-versions');
  await mkdir(versionsDir, { recursive: true });
  // Shared across simulators: entries are keyed by source content, so a warm cache stays valid.
  const cacheDir = join(tmpdir(), 'talos-sim-node-compile-cache');
  const paths: WrapperPaths = { talosctl: join(binDir, 'talosctl'), tofu: join(binDir, 'tofu'), talosctlVersions: versionsDir };
  await writeExecutable(paths.talosctl, script(controlUrl, talosctlCli, DEFAULT_CLIENT_VERSION, cacheDir));
  await writeExecutable(paths.tofu, script(controlUrl, tofuCli, undefined, cacheDir));
  for (const version of CLIENT_VERSIONS) {
    await writeExecutable(join(versionsDir, `talosctl-${version}`), script(controlUrl, talosctlCli, version, cacheDir));
  }
  return paths;
}
