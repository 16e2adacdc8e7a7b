import { minorOf } from '../../talos/compatibility.ts';
import type { NodeError } from '../../talos/parse-node-errors.ts';
import type { TalosVersionReport } from '../../talos/parse-version.ts';
import type { CheckResult } from '../check-result.ts';
import { alignColumns, joinProblems, oneLine, plural } from './format.ts';

const ID = 'talos-version';

/**
 * The runbook's `talosctl version` verdict. Failed when a node is missing or unreachable; a
 * mixed-version cluster is a warning (normal in the middle of a rolling upgrade, but reported),
 * as is a talosctl client of another minor than the cluster (the runbook asks for a matching
 * client).
 *
 * @param expectedNodes every node address from the inventory
 * @param nodeErrors per-node errors from the command's stderr
 */
export function evaluateTalosVersions(report: TalosVersionReport, expectedNodes: string[], nodeErrors: NodeError[] = []): CheckResult {
  const title = `Talos version (${expectedNodes.join(', ')})`;
  if (expectedNodes.length === 0) {
    return { id: ID, title, status: 'failed', summary: 'no nodes to query: the inventory lists none', evidence: [] };
  }
  const servers = report.servers.map((s) => ({
    node: s.node ?? (expectedNodes.length === 1 && report.servers.length === 1 ? expectedNodes[0] : undefined),
    tag: s.tag,
  }));
  const problems: string[] = [];
  const rows: string[][] = [];
  const byTag = new Map<string, string[]>();
  for (const node of expectedNodes) {
    const answers = servers.filter((s) => s.node === node);
    if (answers.length > 1) {
      problems.push(
        `${node} reported its Talos version ${answers.length} times (${answers.map((s) => s.tag).join(', ')}), so the output cannot be trusted`,
      );
    }
    const server = answers[0];
    if (server === undefined) {
      const error = nodeErrors.find((e) => e.node === node);
      const why = error === undefined ? 'no answer' : oneLine(error.message);
      problems.push(`${node} did not report its Talos version: ${why}`);
      rows.push([node, 'unreachable', why]);
      continue;
    }
    rows.push([node, server.tag]);
    byTag.set(server.tag, [...(byTag.get(server.tag) ?? []), node]);
  }
  if (report.client !== undefined) rows.push(['client (talosctl)', report.client.tag]);
  const evidence = alignColumns(rows);
  if (problems.length > 0) return { id: ID, title, status: 'failed', summary: joinProblems(problems), evidence };

  const notes: string[] = [];
  const tags = [...byTag.keys()];
  if (tags.length > 1) {
    const groups = tags.map((tag) => `${tag} on ${(byTag.get(tag) ?? []).join(', ')}`);
    notes.push(`mixed Talos versions: ${groups.join('; ')}`);
  }
  const minors = [...new Set(tags.map(minorOf))];
  const client = report.client?.tag;
  if (client !== undefined && !minors.includes(minorOf(client))) {
    notes.push(`talosctl ${client} does not match the running Talos ${minors.join('/')}: use a talosctl of the running version`);
  }
  if (notes.length > 0) return { id: ID, title, status: 'warning', summary: joinProblems(notes), evidence };
  return {
    id: ID,
    title,
    status: 'passed',
    summary: `${expectedNodes.length === 1 ? 'the node runs' : `all ${plural(expectedNodes.length, 'node')} run`} Talos ${tags[0] ?? ''}`,
    evidence,
  };
}
