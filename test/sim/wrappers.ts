/** Writes the executables the bot runs: `bin/talosctl`, `bin/tofu` and `bin/talosctl-versions/talosctl-<v>`. */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CLIENT_VERSIONS, DEFAULT_CLIENT_VERSION } from './versions.ts';

export interface WrapperPaths {
  /** The simulator's line port, inside every script. */
  port: number;
  talosctl: string;
  tofu: string;
  /** Directory of `talosctl-<version>` executables, one per shipped client. */
  talosctlVersions: string;
}

/**
 * A Bash script that relays one invocation to the simulator over its line protocol (see
 * `control-server.ts`) and replays the answer: it starts in about a millisecond, as a Go binary
 * would. The simulator's port travels inside the script, not through the caller's environment:
 * the bot runs these with an explicit env and never passes simulator variables through.
 */
function script(port: number, bin: 'talosctl' | 'tofu', clientVersion: string): string {
  return relayScript(port, bin, clientVersion);
}

/** The simulated talosctl of `version`, as a release would publish it: what the test release server serves. */
export function talosctlScript(port: number, version: string): string {
  return relayScript(port, 'talosctl', version);
}

function relayScript(port: number, bin: 'talosctl' | 'tofu', clientVersion: string): string {
  return `#!/bin/bash
# The simulated ${bin}${clientVersion ? ` ${clientVersion}` : ''}: forwards argv, cwd and where the talosconfig is to the simulator.
{ exec 3<>/dev/tcp/127.0.0.1/${port}; } 2>/dev/null || { echo "${bin}: cannot reach the simulator at 127.0.0.1:${port}" >&2; exit 1; }
printf '%s\\0' v1 ${bin} "$PWD" '${clientVersion}' "\${TALOSCONFIG+set}" "\${TALOSCONFIG-}" "\${HOME-}" "$#" "$@" >&3
code=
while IFS= read -r line <&3; do
  case $line in
    o*) printf '%s\\n' "\${line#o}" ;;
    e*) printf '%s\\n' "\${line#e}" >&2 ;;
    O*) printf '%s' "\${line#O}" ;;
    E*) printf '%s' "\${line#E}" >&2 ;;
    r) if IFS= read -r answer; then printf 'a%s\\n' "$answer" >&3; else printf 'z\\n' >&3; fi ;;
    x*) code=\${line#x}; break ;;
  esac
done
[ -n "$code" ] || { echo "${bin}: the simulator closed the connection" >&2; exit 1; }
exit "$code"
`;
}

async function writeExecutable(path: string, content: string): Promise<void> {
  await writeFile(path, content, { mode: 0o755 });
  await chmod(path, 0o755);
}

export async function writeWrappers(binDir: string, port: number): Promise<WrapperPaths> {
  const versionsDir = join(binDir, 'talosctl-versions');
  await mkdir(versionsDir, { recursive: true });
  const paths: WrapperPaths = { port, talosctl: join(binDir, 'talosctl'), tofu: join(binDir, 'tofu'), talosctlVersions: versionsDir };
  await writeExecutable(paths.talosctl, script(port, 'talosctl', DEFAULT_CLIENT_VERSION));
  await writeExecutable(paths.tofu, script(port, 'tofu', ''));
  for (const version of CLIENT_VERSIONS) {
    await writeExecutable(join(versionsDir, `talosctl-${version}`), script(port, 'talosctl', version));
  }
  return paths;
}
