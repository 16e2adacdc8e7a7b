import { ParseError, requireContent, splitLines } from './parse-error.ts';
import { readGoQuoted } from './parse-go-quoted.ts';

const SOURCE = 'talosctl etcd snapshot';

const SAVED_PREFIX = 'etcd snapshot saved to ';
const SAVED_SUFFIX = /^ \(([0-9]+) bytes\)$/;
const INFO = /^snapshot info: hash ([0-9a-f]{8}), revision ([0-9]+), total keys ([0-9]+), total size ([0-9]+)$/;

/** What `talosctl etcd snapshot <path>` reports about the snapshot it wrote. */
export interface SnapshotReport {
  /** The path the snapshot was saved to, as talosctl printed it. */
  path: string;
  /** Size of the file written, in bytes. */
  bytes: number;
  /** etcd's hash of the snapshot, 8 hex digits. */
  hash: string;
  revision: number;
  totalKeys: number;
  /** etcd's logical database size, in bytes. */
  totalSize: number;
}

/**
 * Parses `talosctl etcd snapshot` stdout:
 * `etcd snapshot saved to "db.snapshot" (2015264 bytes)` then
 * `snapshot info: hash c25fd181, revision 4193, total keys 1287, total size 3035136`.
 * Both lines are required: talosctl prints the second only after etcd could read the file back.
 *
 * @throws {ParseError} when either line is missing or malformed
 */
export function parseSnapshotOutput(stdout: string): SnapshotReport {
  requireContent(stdout, SOURCE);
  const lines = splitLines(stdout).filter((l) => l.trim() !== '');
  const savedLine = lines.find((l) => l.startsWith(SAVED_PREFIX));
  if (savedLine === undefined) {
    throw new ParseError(SOURCE, `no "${SAVED_PREFIX.trim()}" line`, lines[0]);
  }
  const path = readGoQuoted(savedLine, SAVED_PREFIX.length);
  const size = path === undefined ? null : SAVED_SUFFIX.exec(savedLine.slice(path.end));
  if (path === undefined || size === null || size[1] === undefined) {
    throw new ParseError(SOURCE, 'the saved-to line is malformed', savedLine);
  }
  const infoLine = lines.find((l) => l.startsWith('snapshot info:'));
  if (infoLine === undefined) {
    throw new ParseError(SOURCE, 'no "snapshot info:" line: the snapshot was not verified', savedLine);
  }
  const info = INFO.exec(infoLine);
  if (info === null) throw new ParseError(SOURCE, 'the snapshot info line is malformed', infoLine);
  const [, hash = '', revision = '', keys = '', total = ''] = info;
  return {
    path: path.value,
    bytes: Number(size[1]),
    hash,
    revision: Number(revision),
    totalKeys: Number(keys),
    totalSize: Number(total),
  };
}
