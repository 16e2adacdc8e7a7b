import type { Operation } from '../ops/operation.ts';
import { formatTime } from './blocks.ts';
import { stepLabel } from './operation-root.ts';

function describe(op: Operation): string {
  const target = `${op.target.node ? ` of ${op.target.node}` : ''}${op.target.version ? ` → ${op.target.version}` : ''}`;
  const doneSteps = op.steps.filter((s) => s.status === 'done' || s.status === 'skipped').length;
  const progress = op.steps.length > 0 ? ` · ${doneSteps}/${op.steps.length} steps` : '';
  const reason = op.reason ? ` · ${op.reason}` : '';
  // The live view of a step: the root message changes only with the phase.
  const running = op.steps.find((s) => s.status === 'running');
  const now = running ? ` · now: ${stepLabel(running)}${running.detail ? ` (${running.detail})` : ''}` : '';
  return `• \`${op.id}\` ${op.kind}${target} on *${op.cluster}*: ${op.state}${progress}${now} · requested by <@${op.requestedBy}> ${formatTime(op.createdAt)}${reason}`;
}

/** `/talos status`: what runs or waits now, then the latest finished operations per cluster. */
export function statusText(byCluster: { cluster: string; holder: string | undefined; ops: Operation[] }[]): string {
  const lines: string[] = [];
  for (const { cluster, holder, ops } of byCluster) {
    lines.push(`*${cluster}* — ${holder ? `locked by \`${holder}\`` : 'no operation holds it'}`);
    const active = ops.filter((o) => ['preflight', 'planned', 'running', 'awaiting-approval', 'paused', 'failed'].includes(o.state));
    const recent = ops.filter((o) => !active.includes(o)).slice(0, 5);
    if (active.length === 0 && recent.length === 0) lines.push('  no operations yet');
    for (const op of active) lines.push(describe(op));
    if (recent.length > 0) lines.push('  _recent:_', ...recent.map(describe));
  }
  return lines.join('\n');
}
