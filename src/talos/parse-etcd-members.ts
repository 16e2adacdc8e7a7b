import { ParseError } from './parse-error.ts';
import { booleanCell, parseTableRows, requireColumns, toRecords } from './parse-table.ts';

const SOURCE = 'talosctl etcd members';

/** One row of `talosctl etcd members`: a member as one node's etcd sees the membership. */
export interface EtcdMember {
  /** The node whose view this row is; absent without a NODE column (≤1.13, node == endpoint). */
  node?: string;
  /** Member ID, hex. */
  id: string;
  /** Member name; empty for a member that was added but has not started yet. */
  hostname: string;
  peerUrls: string[];
  /** Empty for a member that has not started yet. */
  clientUrls: string[];
  /** Absent on old talosctl releases that had no LEARNER column. */
  learner?: boolean;
}

function urls(cell: string): string[] {
  return cell === '' ? [] : cell.split(',').map((u) => u.trim());
}

/**
 * Parses `talosctl etcd members` stdout (`NODE ID HOSTNAME PEER URLS CLIENT URLS LEARNER`;
 * NODE and LEARNER are absent on some releases). A header with no rows parses to `[]`.
 *
 * @throws {ParseError} on empty, truncated or unrecognised output
 */
export function parseEtcdMembers(stdout: string): EtcdMember[] {
  const table = parseTableRows(stdout, SOURCE);
  requireColumns(table.headers, ['ID', 'HOSTNAME', 'PEER URLS', 'CLIENT URLS'], SOURCE);
  const hasNode = table.headers.includes('NODE');
  const hasLearner = table.headers.includes('LEARNER');
  return toRecords(table).map((cells, index) => {
    const line = table.lines[index] ?? '';
    const id = cells['ID'] ?? '';
    if (!/^[0-9a-f]{1,16}$/.test(id)) {
      throw new ParseError(SOURCE, `ID should be a hex member ID, found ${JSON.stringify(id)}`, line);
    }
    const member: EtcdMember = {
      id,
      hostname: cells['HOSTNAME'] ?? '',
      peerUrls: urls(cells['PEER URLS'] ?? ''),
      clientUrls: urls(cells['CLIENT URLS'] ?? ''),
    };
    if (hasNode) {
      const node = cells['NODE'] ?? '';
      if (node === '') throw new ParseError(SOURCE, 'NODE is empty', line);
      member.node = node;
    }
    if (hasLearner) member.learner = booleanCell(cells['LEARNER'] ?? '', 'LEARNER', line, SOURCE);
    return member;
  });
}
