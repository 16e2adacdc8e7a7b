import { ParseError, requireContent, splitLines } from './parse-error.ts';
import { parseGoQuotedList, readGoQuoted } from './parse-go-quoted.ts';

const SOURCE = 'talosctl health';

/** Where a health check got to: `pending` means it never reported OK or SKIP. */
export type HealthCheckResult = 'OK' | 'SKIP' | 'pending';

/** One check of `talosctl health`, e.g. `etcd to be healthy`. */
export interface HealthCheck {
  name: string;
  result: HealthCheckResult;
  /** The last error the check reported while waiting; may span lines (`1 error occurred:` …). */
  lastError?: string;
}

/** What `talosctl health` printed. */
export interface HealthReport {
  /** From `discovered nodes: [...]` (server mode). */
  discoveredNodes?: string[];
  /** In the order talosctl first reported them. */
  checks: HealthCheck[];
  /** Text after the last check, i.e. the error talosctl exited with (`healthcheck error: rpc error: … DeadlineExceeded …`). */
  finalError?: string;
  /** The gRPC code of the final error (`DeadlineExceeded` when `--wait-timeout` ran out), when it is an rpc error. */
  finalErrorCode?: string;
  /** The final error less talosctl's `healthcheck error: ` (≤ 1.13 in server mode) and the `rpc error: code = … desc = ` wrapper. */
  finalErrorCause?: string;
}

/**
 * Server mode (the default) through apid's one-to-many proxy, as a ≤ 1.13 client with `--nodes`
 * runs it: the server's error arrives in the message metadata and health.go prints
 * `healthcheck error: <error>`; the 1.14 client prints the stream's error as it is
 * (siderolabs/talos cmd/talosctl/cmd/talos/health.go at v1.13.9 and v1.14.0-rc.1).
 */
const FINAL_ERROR = /^(?:error: )?(?:healthcheck error: )?(?:rpc error: code = (\w+) desc = )?([\s\S]*)$/;

const CHECK_LINE = /^waiting for (.+?): (.*)$/;
const DISCOVERED = /^discovered nodes: (.*)$/;
// On a terminal talosctl colours its progress lines; a pipe gets none, but stripping costs nothing.
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

/** Every Go-quoted string in `text`, for the variants of the discovered-nodes line. */
function quotedStrings(text: string): string[] {
  const found: string[] = [];
  for (let i = text.indexOf('"'); i !== -1;) {
    const read = readGoQuoted(text, i);
    if (read === undefined) break;
    found.push(read.value);
    i = text.indexOf('"', read.end);
  }
  return found;
}

/**
 * Parses `talosctl health` stderr (stdout stays empty): `discovered nodes: [...]`, then per check
 * `waiting for <check>: ...`, interim errors, and `: OK` / `: SKIP`; on failure the last interim
 * error stays and the command's final error follows. Multi-line interim errors
 * (`1 error occurred:\n\t* 10.5.0.2: …`) belong to their check. Text that is not a check line is
 * the final error: the tool prints any error text there, so it is kept, never dropped.
 *
 * @throws {ParseError} when stderr holds nothing but whitespace and warnings
 */
export function parseHealthOutput(stderr: string): HealthReport {
  requireContent(stderr, SOURCE);
  const report: HealthReport = { checks: [] };
  const byName = new Map<string, HealthCheck>();
  let continuing: HealthCheck | undefined;
  let trailing: string[] = [];

  for (const raw of splitLines(stderr.replace(ANSI, ''))) {
    const line = raw.trimEnd();
    if (line.trim() === '') {
      continuing = undefined;
      continue;
    }
    const discovered = DISCOVERED.exec(line);
    if (discovered !== null) {
      const list = discovered[1] ?? '';
      report.discoveredNodes = parseGoQuotedList(list) ?? quotedStrings(list);
      continuing = undefined;
      continue;
    }
    const check = CHECK_LINE.exec(line);
    if (check !== null) {
      // Lines between checks were not the final error after all (e.g. a library warning).
      trailing = [];
      const [, name = '', status = ''] = check;
      let entry = byName.get(name);
      if (entry === undefined) {
        entry = { name, result: 'pending' };
        byName.set(name, entry);
        report.checks.push(entry);
      }
      continuing = undefined;
      if (status === 'OK' || status === 'SKIP') entry.result = status;
      else if (status !== '...') {
        entry.lastError = status;
        continuing = entry;
      }
      continue;
    }
    if (continuing !== undefined && /^\s/.test(line)) {
      continuing.lastError = `${continuing.lastError ?? ''}\n${line.trim()}`;
      continue;
    }
    continuing = undefined;
    if (line.startsWith('WARNING:')) continue;
    trailing.push(line);
  }
  if (trailing.length > 0) {
    report.finalError = trailing.join('\n');
    const [, code, cause] = FINAL_ERROR.exec(report.finalError) ?? [];
    if (code !== undefined) report.finalErrorCode = code;
    if (cause !== undefined && cause !== report.finalError) report.finalErrorCause = cause;
  }
  if (report.checks.length === 0 && report.discoveredNodes === undefined && report.finalError === undefined) {
    throw new ParseError(SOURCE, 'no health check lines', stderr.trim());
  }
  return report;
}
