import { ParseError } from './parse-error.ts';
import { booleanCell, integerCell, parseTableRows, requireColumns, toRecords } from './parse-table.ts';

const SOURCE = 'talosctl etcd status';

/** etcd member IDs: `%016x` since the IDs were zero-padded, unpadded hex before. */
const MEMBER_ID = /^[0-9a-f]{1,16}$/;

const REQUIRED = ['MEMBER', 'DB SIZE', 'IN USE', 'LEADER', 'RAFT INDEX', 'RAFT TERM', 'RAFT APPLIED INDEX', 'LEARNER', 'ERRORS'] as const;

/** One row of `talosctl etcd status`: the status one node's etcd member reports. */
export interface EtcdStatusRow {
  /** The queried node; absent when the table has no NODE column (≤1.13, node == endpoint). */
  node?: string;
  /** Member ID, hex. */
  member: string;
  /** Database size as printed, SI units, e.g. `21 MB`. */
  dbSize: string;
  /** Size in use as printed, e.g. `6.0 MB (29.08%)`. */
  inUse: string;
  /** The leader this member sees, hex; all zeros when it sees none. */
  leader: string;
  raftIndex: number;
  raftTerm: number;
  raftAppliedIndex: number;
  learner: boolean;
  /** etcd protocol version (talosctl ≥1.11). */
  protocol?: string;
  /** etcd storage version (talosctl ≥1.11). */
  storage?: string;
  /** Errors and alarms the member reports, e.g. `NOSPACE`; empty when healthy. */
  errors: string[];
}

function memberId(value: string, column: string, line: string): string {
  if (!MEMBER_ID.test(value)) {
    throw new ParseError(SOURCE, `${column} should be a hex member ID, found ${JSON.stringify(value)}`, line);
  }
  return value;
}

function nonEmpty(value: string, column: string, line: string): string {
  if (value === '') throw new ParseError(SOURCE, `${column} is empty`, line);
  return value;
}

/**
 * Parses `talosctl etcd status` stdout. Handles the ≤1.10 columns and the ≥1.11 columns
 * (PROTOCOL, STORAGE before ERRORS), with or without the NODE column. A header with no rows
 * parses to `[]` (every node failed; the reasons are on stderr).
 *
 * @throws {ParseError} on empty, truncated or unrecognised output
 */
export function parseEtcdStatus(stdout: string): EtcdStatusRow[] {
  const table = parseTableRows(stdout, SOURCE);
  requireColumns(table.headers, REQUIRED, SOURCE);
  const hasNode = table.headers.includes('NODE');
  const hasProtocol = table.headers.includes('PROTOCOL');
  const hasStorage = table.headers.includes('STORAGE');
  return toRecords(table).map((cells, index) => {
    const line = table.lines[index] ?? '';
    const cell = (name: string): string => cells[name] ?? '';
    const row: EtcdStatusRow = {
      member: memberId(cell('MEMBER'), 'MEMBER', line),
      dbSize: nonEmpty(cell('DB SIZE'), 'DB SIZE', line),
      inUse: nonEmpty(cell('IN USE'), 'IN USE', line),
      leader: memberId(cell('LEADER'), 'LEADER', line),
      raftIndex: integerCell(cell('RAFT INDEX'), 'RAFT INDEX', line, SOURCE),
      raftTerm: integerCell(cell('RAFT TERM'), 'RAFT TERM', line, SOURCE),
      raftAppliedIndex: integerCell(cell('RAFT APPLIED INDEX'), 'RAFT APPLIED INDEX', line, SOURCE),
      learner: booleanCell(cell('LEARNER'), 'LEARNER', line, SOURCE),
      errors: cell('ERRORS')
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e !== ''),
    };
    if (hasNode) row.node = nonEmpty(cell('NODE'), 'NODE', line);
    if (hasProtocol) row.protocol = cell('PROTOCOL');
    if (hasStorage) row.storage = cell('STORAGE');
    return row;
  });
}
