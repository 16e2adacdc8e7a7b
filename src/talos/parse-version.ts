import { z } from 'zod';
import { ParseError, requireContent, splitLines } from './parse-error.ts';
import { parseJsonStream } from './parse-json-stream.ts';

const SOURCE = 'talosctl version';
const JSON_SOURCE = 'talosctl version --json';

/** A Talos release tag as talosctl prints it: `v1.11.0`, `v1.13.0-rc.1`, dev builds with `git describe` suffixes. */
const TAG = /^v?[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*$/;

/** One node's answer to `talosctl version`. */
export interface ServerVersion {
  /** The NODE line's value; `undefined` when talosctl printed none or an empty one. */
  node: string | undefined;
  /** e.g. `v1.11.0`. */
  tag: string;
}

/** What `talosctl version` reported. */
export interface TalosVersionReport {
  /** The talosctl binary's own version; absent with `--json`. */
  client?: { tag: string };
  /** One entry per node that answered, in output order. */
  servers: ServerVersion[];
}

function checkedTag(value: string, line: string, source: string): string {
  if (!TAG.test(value)) throw new ParseError(source, `Tag should be a version like v1.11.0, found ${JSON.stringify(value)}`, line);
  return value;
}

/**
 * Parses `talosctl version` stdout (also `--short` and `--client`). Every detail line starts
 * with a tab (`\tTag:         v1.11.0`); with `--short` the client block is the single untabbed
 * line `Talos v1.11.0`. The server block repeats `NODE` / `Tag` / … per node. A `Server:`
 * header with no entries means no node answered (the errors are on stderr).
 *
 * @throws {ParseError} on empty, truncated or unrecognised output
 */
export function parseTalosVersion(stdout: string): TalosVersionReport {
  requireContent(stdout, SOURCE);
  let section: 'none' | 'client' | 'server' = 'none';
  const report: TalosVersionReport = { servers: [] };
  let pendingNode: { node: string | undefined; line: string } | undefined;
  let sawServerHeader = false;

  for (const line of splitLines(stdout)) {
    if (line.trim() === '') continue;
    if (line === 'Client:') {
      section = 'client';
      continue;
    }
    if (line === 'Server:') {
      section = 'server';
      sawServerHeader = true;
      continue;
    }
    const detail = /^\t([A-Za-z][A-Za-z /]*):(?: +(.*))?$/.exec(line);
    if (section === 'client') {
      const short = /^Talos (\S+)$/.exec(line);
      if (short?.[1] !== undefined) {
        report.client = { tag: checkedTag(short[1], line, SOURCE) };
        continue;
      }
      if (detail === null) throw new ParseError(SOURCE, 'unexpected line in the Client block', line);
      if (detail[1] === 'Tag') report.client = { tag: checkedTag((detail[2] ?? '').trim(), line, SOURCE) };
      continue;
    }
    if (section === 'server') {
      if (detail === null) throw new ParseError(SOURCE, 'unexpected line in the Server block', line);
      const [, label = '', rawValue = ''] = detail;
      const value = rawValue.trim();
      if (label === 'NODE') {
        if (pendingNode !== undefined) throw new ParseError(SOURCE, 'a NODE has no Tag line', pendingNode.line);
        pendingNode = { node: value === '' ? undefined : value, line };
      } else if (label === 'Tag') {
        report.servers.push({ node: pendingNode?.node, tag: checkedTag(value, line, SOURCE) });
        pendingNode = undefined;
      }
      continue;
    }
    throw new ParseError(SOURCE, 'expected "Client:" or "Server:" first', line);
  }
  if (pendingNode !== undefined) {
    throw new ParseError(SOURCE, 'the last NODE has no Tag line: the output is truncated', pendingNode.line);
  }
  if (report.client === undefined && !sawServerHeader) {
    throw new ParseError(SOURCE, 'no Client or Server block');
  }
  return report;
}

const VersionMessage = z.object({
  metadata: z.object({ hostname: z.string().optional() }).optional(),
  version: z.object({ tag: z.string() }),
});

/**
 * Parses the hidden `talosctl version --json`: no Client block, one protojson object per node.
 * protojson varies its whitespace, so the objects are read as a JSON stream, not by line.
 *
 * @throws {ParseError} on empty output, invalid JSON or an object without `version.tag`
 */
export function parseTalosVersionJson(stdout: string): TalosVersionReport {
  const servers = parseJsonStream(stdout, JSON_SOURCE).map((value) => {
    const parsed = VersionMessage.safeParse(value);
    if (!parsed.success) {
      throw new ParseError(JSON_SOURCE, 'an object has no version.tag', JSON.stringify(value));
    }
    const hostname = parsed.data.metadata?.hostname;
    return {
      node: hostname === undefined || hostname === '' ? undefined : hostname,
      tag: checkedTag(parsed.data.version.tag, JSON.stringify(value), JSON_SOURCE),
    };
  });
  return { servers };
}
