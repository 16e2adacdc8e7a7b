import type { EtcdStatusRow } from '../../talos/parse-etcd-status.ts';
import type { NodeError } from '../../talos/parse-node-errors.ts';
import type { CheckResult } from '../check-result.ts';
import { alignColumns, joinProblems, oneLine } from './format.ts';

const ID = 'etcd-status';

/** etcd prints the leader as `%016x`; a member that sees no leader reports ID 0. */
function hasNoLeader(leader: string): boolean {
  return /^0*$/.test(leader);
}

interface Attributed {
  node: string | undefined;
  row: EtcdStatusRow;
}

/**
 * Without a NODE column (only one node queried, node == endpoint) the single row belongs to the
 * single expected node; with several expected nodes it cannot be attributed.
 */
function attribute(rows: EtcdStatusRow[], expected: string[]): Attributed[] {
  return rows.map((row) => ({
    node: row.node ?? (expected.length === 1 && rows.length === 1 ? expected[0] : undefined),
    row,
  }));
}

function renderRow({ node, row }: Attributed): string[] {
  return [
    node ?? '(no NODE column)',
    `member ${row.member}`,
    `leader ${row.leader}`,
    `term ${row.raftTerm}`,
    `index ${row.raftIndex}/${row.raftAppliedIndex}`,
    `db ${row.dbSize}`,
    `in use ${row.inUse}`,
    row.learner ? 'learner' : 'voter',
    row.errors.length > 0 ? `errors ${row.errors.join(', ')}` : 'no errors',
  ];
}

/**
 * The runbook's `talosctl etcd status --nodes <every control plane>` verdict. Failed when an
 * expected node is missing or errored, a member sees no leader, members disagree on the leader,
 * a member reports errors or alarms (NOSPACE), or the leader is none of the members; a learner
 * is a warning (it is not voting yet).
 *
 * @param expectedControlPlanes every control-plane address from the inventory
 * @param nodeErrors per-node errors from the command's stderr
 */
export function evaluateEtcdStatus(rows: EtcdStatusRow[], expectedControlPlanes: string[], nodeErrors: NodeError[] = []): CheckResult {
  const title = `etcd status (${expectedControlPlanes.join(', ')})`;
  if (expectedControlPlanes.length === 0) {
    return { id: ID, title, status: 'failed', summary: 'no control-plane nodes to query: the inventory lists none', evidence: [] };
  }
  const attributed = attribute(rows, expectedControlPlanes);
  const problems: string[] = [];
  const notes: string[] = [];
  const errorLines: string[] = [];

  if (attributed.some((a) => a.node === undefined)) {
    problems.push('etcd status printed no NODE column for several nodes, so the rows cannot be attributed');
  }
  // One row per queried node: a node printed twice means the table is not what talosctl prints.
  const nodes = attributed.map((a) => a.node).filter((n): n is string => n !== undefined);
  for (const node of new Set(nodes.filter((n, i) => nodes.indexOf(n) !== i))) {
    problems.push(`etcd status printed ${node} more than once, so its table cannot be trusted`);
  }
  const missing: string[] = [];
  for (const node of expectedControlPlanes) {
    const error = nodeErrors.find((e) => e.node === node);
    const answered = attributed.some((a) => a.node === node);
    if (error !== undefined) {
      problems.push(`etcd status failed on ${node}: ${oneLine(error.message)}`);
      errorLines.push(`${node}: ${oneLine(error.message)}`);
    } else if (!answered) {
      problems.push(`no etcd status from ${node}`);
    }
    if (!answered) missing.push(node);
  }
  for (const error of nodeErrors) {
    if (!expectedControlPlanes.includes(error.node)) errorLines.push(`${error.node}: ${oneLine(error.message)}`);
  }

  for (const { node, row } of attributed) {
    const where = node ?? `member ${row.member}`;
    if (hasNoLeader(row.leader)) problems.push(`etcd has no leader on ${where}`);
    if (row.errors.length > 0) problems.push(`etcd on ${where} reports ${row.errors.join(', ')}`);
    if (row.learner) notes.push(`member ${row.member} on ${where} is a learner, not yet voting`);
    if (node !== undefined && !expectedControlPlanes.includes(node)) {
      notes.push(`${node} answered but is not a control plane in the inventory`);
    }
  }

  const leaders = [...new Set(attributed.map((a) => a.row.leader).filter((l) => !hasNoLeader(l)))];
  const members = attributed.map((a) => a.row.member);
  if (leaders.length > 1) {
    const views = attributed.filter((a) => !hasNoLeader(a.row.leader)).map((a) => `${a.node ?? a.row.member} sees ${a.row.leader}`);
    problems.push(`etcd members disagree on the leader: ${views.join(', ')}`);
  } else if (leaders.length === 1 && missing.length === 0 && !members.includes(leaders[0] ?? '')) {
    problems.push(`the leader ${leaders[0] ?? ''} is none of the members that answered (${members.join(', ')})`);
  }

  const evidence = [...alignColumns(attributed.map(renderRow)), ...errorLines, ...notes];
  if (problems.length > 0) {
    return { id: ID, title, status: 'failed', summary: joinProblems(problems), evidence };
  }
  const leader = leaders[0] ?? '';
  const leaderNode = attributed.find((a) => a.row.member === leader)?.node ?? 'an unlisted node';
  const summary = `leader ${leader} on ${leaderNode}; ${attributed.length}/${expectedControlPlanes.length} members agree, no errors`;
  if (notes.length > 0) {
    return { id: ID, title, status: 'warning', summary: `${summary}; ${joinProblems(notes)}`, evidence };
  }
  return { id: ID, title, status: 'passed', summary, evidence };
}
