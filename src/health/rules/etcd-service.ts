import type { NodeError } from '../../talos/parse-node-errors.ts';
import type { ServiceInfo } from '../../talos/parse-service.ts';
import type { CheckResult } from '../check-result.ts';
import { joinProblems, oneLine } from './format.ts';

const ID = 'etcd-service';

function newestEvent(info: ServiceInfo): string | undefined {
  const event = info.events[0];
  return event === undefined ? undefined : `[${event.state}] ${event.message} (${event.ago} ago)`;
}

function describe(node: string, info: ServiceInfo): string {
  const parts = [`${node}: etcd ${info.state}, health ${info.health}`];
  if (info.lastHealthMessage !== undefined) parts.push(`last health message: ${oneLine(info.lastHealthMessage)}`);
  const event = newestEvent(info);
  if (event !== undefined) parts.push(`newest event: ${event}`);
  return parts.join('; ');
}

/**
 * The runbook's `talosctl service etcd --nodes <control plane>` verdict: failed when a control
 * plane's etcd is missing, not `Running`, or not healthy (`OK`). Evidence gives each node's state
 * with its last health message and newest event.
 *
 * @param infos parsed `talosctl service etcd` blocks; other services are ignored
 * @param expectedControlPlanes every control-plane address from the inventory
 * @param nodeErrors per-node errors from stderr, quoted when a node gave no block
 */
export function evaluateEtcdService(infos: ServiceInfo[], expectedControlPlanes: string[], nodeErrors: NodeError[] = []): CheckResult {
  const title = `etcd service (${expectedControlPlanes.join(', ')})`;
  if (expectedControlPlanes.length === 0) {
    return { id: ID, title, status: 'failed', summary: 'no control-plane nodes to query: the inventory lists none', evidence: [] };
  }
  const etcd = infos.filter((info) => info.id === 'etcd');
  const nodeOf = (info: ServiceInfo): string | undefined =>
    info.node ?? (expectedControlPlanes.length === 1 && etcd.length === 1 ? expectedControlPlanes[0] : undefined);
  const problems: string[] = [];
  const evidence: string[] = [];
  for (const node of expectedControlPlanes) {
    const info = etcd.find((i) => nodeOf(i) === node);
    if (info === undefined) {
      const error = nodeErrors.find((e) => e.node === node);
      const why = error === undefined ? '' : `: ${oneLine(error.message)}`;
      problems.push(`no etcd service status from ${node}${why}`);
      evidence.push(`${node}: no answer${why}`);
      continue;
    }
    evidence.push(describe(node, info));
    if (info.state !== 'Running' || info.health !== 'OK') {
      const message = info.lastHealthMessage ?? info.events[0]?.message;
      problems.push(`etcd on ${node} is ${info.state} with health ${info.health}${message === undefined ? '' : `: ${oneLine(message)}`}`);
    }
  }
  if (problems.length > 0) return { id: ID, title, status: 'failed', summary: joinProblems(problems), evidence };
  const count = expectedControlPlanes.length;
  return { id: ID, title, status: 'passed', summary: `etcd Running and healthy on ${count}/${count} control planes`, evidence };
}
