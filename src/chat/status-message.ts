import type { ClusterSummary } from '../ops/cluster-summary.ts';
import type { Operation } from '../ops/operation.ts';
import { ACTIVE } from '../ops/state-machine.ts';
import { formatTime } from './blocks.ts';
import { operationRef } from './operation-link.ts';
import type { PresentationLookup } from './presentation.ts';

/** Links to operations' threads, by operation id; an operation without one is named by its id. */
export type OperationLinks = ReadonlyMap<string, string>;

const NO_LINKS: OperationLinks = new Map();

function describe(op: Operation, presentations: PresentationLookup, links: OperationLinks): string {
  const target = `${op.target.node ? ` of ${op.target.node}` : ''}${op.target.version ? ` → ${op.target.version}` : ''}`;
  const doneSteps = op.steps.filter((s) => s.status === 'done' || s.status === 'skipped').length;
  const progress = op.steps.length > 0 ? ` · ${doneSteps}/${op.steps.length} steps` : '';
  const reason = op.reason ? ` · ${op.reason}` : '';
  // The live view of a step: the root message changes only with the phase.
  const running = op.steps.find((s) => s.status === 'running');
  const now = running ? ` · now: ${presentations(op.kind).stepLabel(running)}${running.detail ? ` (${running.detail})` : ''}` : '';
  return `• ${operationRef(op.id, links.get(op.id))} ${op.kind}${target} on *${op.cluster}*: ${op.state}${progress}${now} · requested by <@${op.requestedBy}> ${formatTime(op.createdAt)}${reason}`;
}

/** What `/talos status` lists of a cluster: what runs or waits now, then the five latest finished. */
export function shownOperations(ops: readonly Operation[]): { active: Operation[]; recent: Operation[] } {
  const active = ops.filter((o) => ACTIVE.includes(o.state));
  return { active, recent: ops.filter((o) => !active.includes(o)).slice(0, 5) };
}

/** `/talos status` in a cluster's channel: what runs or waits now, then the latest finished operations, each linked to its thread. */
export function statusText(
  byCluster: { cluster: string; holder: string | undefined; ops: Operation[] }[],
  presentations: PresentationLookup,
  links: OperationLinks = NO_LINKS,
): string {
  const lines: string[] = [];
  for (const { cluster, holder, ops } of byCluster) {
    lines.push(`*${cluster}* — ${holder ? `locked by ${operationRef(holder, links.get(holder))}` : 'no operation holds it'}`);
    const { active, recent } = shownOperations(ops);
    if (active.length === 0 && recent.length === 0) lines.push('  no operations yet');
    for (const op of active) lines.push(describe(op, presentations, links));
    if (recent.length > 0) lines.push('  _recent:_', ...recent.map((op) => describe(op, presentations, links)));
  }
  return lines.join('\n');
}

/**
 * One cluster as shown outside its channel (`/talos status` elsewhere, the Home tab of someone
 * outside it): only whether an operation holds it, linked to its thread, and where its channel is.
 */
export function clusterSummaryLine({ cluster, channel, holder }: ClusterSummary, links: OperationLinks = NO_LINKS): string {
  return `*${cluster}* (<#${channel}>) — ${holder ? `held by ${operationRef(holder, links.get(holder))}` : 'no operation holds it'}`;
}

/**
 * `/talos status` outside the clusters' channels (a direct message, another channel): only
 * whether an operation holds each cluster, linked to its thread, and where the cluster's channel
 * is. Targets, nodes, versions and reasons stay in each cluster's own channel.
 */
export function statusSummaryText(clusters: readonly ClusterSummary[], links: OperationLinks = NO_LINKS): string {
  const lines = clusters.map((c) => clusterSummaryLine(c, links));
  return [...lines, "Each cluster's operations, with their progress, are listed by `/talos status` in its own channel."].join('\n');
}
