/** `talosctl version` (cmd/talosctl/cmd/talos/version.go, pkg/machinery/version). */
import { buildInfo } from '../versions.ts';
import type { ExecIO } from '../exec-io.ts';
import { connect, exitAfterPartial, fanOut, reportFailures, successes, type Session } from './session.ts';

function longVersion(tag: string): string {
  const info = buildInfo(tag);
  return (
    `\tTag:         ${info.tag}\n` +
    `\tSHA:         ${info.sha}\n` +
    `\tBuilt:       \n` +
    `\tGo version:  ${info.goVersion}\n` +
    `\tOS/Arch:     linux/amd64\n`
  );
}

/** The client half, which needs no API call (`--client`). */
export function printClientVersion(io: ExecIO, clientVersion: string, short: boolean): void {
  io.out(short ? `Talos ${clientVersion}\n` : `Client:\n${longVersion(clientVersion)}`);
}

export function runVersion(session: Session): number {
  const { parsed, io } = session;
  const json = parsed.bool('json');
  if (!json) printClientVersion(io, session.clientVersion, parsed.bool('short'));
  const connection = connect(session);
  if ('error' in connection) {
    io.err(`error getting version: ${connection.error}\n`);
    return 1;
  }
  const results = fanOut(session, (node) => node.talosVersion);
  const failed = reportFailures(session, results, 'error getting version');
  if (failed !== undefined) return failed;
  const answered = successes(results);
  if (json) {
    for (const r of answered) {
      const info = buildInfo(r.value);
      io.out(
        `${JSON.stringify({
          metadata: { hostname: r.address },
          version: { tag: info.tag, sha: info.sha, goVersion: info.goVersion, os: 'linux', arch: 'amd64' },
          platform: { name: r.node.platform, mode: 'cloud' },
          features: { rbac: true },
        })}\n`,
      );
    }
    return exitAfterPartial(session, results);
  }
  io.out('Server:\n');
  for (const r of answered) {
    io.out(`\tNODE:        ${r.address}\n${longVersion(r.value)}\tEnabled:     RBAC\n`);
  }
  return exitAfterPartial(session, results);
}
