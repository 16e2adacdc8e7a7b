import type { GateOrigin, LastGate } from '../ops/cluster-signals.ts';
import { operationTitle, type NodeNames } from './operation-title.ts';
import type { DeclaredState } from '../health/rules/declared-versions.ts';
import type { ClusterSummary } from '../ops/cluster-summary.ts';
import type { Operation } from '../ops/operation.ts';
import { ACTIVE } from '../ops/state-machine.ts';
import type { Block, ChatMessage } from '../port/chat-port.ts';
import { actions, escapeMrkdwn, formatTime, mention, section, type ButtonSpec } from './blocks.ts';
import { STATUS_ACTION } from './buttons.ts';
import { operationRef } from './operation-link.ts';
import type { PresentationLookup } from './presentation.ts';

/** Links to operations' threads, by operation id; an operation without one is named by its id. */
export type OperationLinks = ReadonlyMap<string, string>;

const NO_LINKS: OperationLinks = new Map();

function describe(op: Operation, presentations: PresentationLookup, links: OperationLinks, names?: NodeNames): string {
  const title = escapeMrkdwn(operationTitle(op, presentations(op.kind), names));
  const doneSteps = op.steps.filter((s) => s.status === 'done' || s.status === 'skipped').length;
  const progress = op.steps.length > 0 ? ` · ${doneSteps}/${op.steps.length} steps` : '';
  const reason = op.reason ? ` · ${op.reason}` : '';
  // The live view of a step: the root message changes only with the phase.
  const running = op.steps.find((s) => s.status === 'running');
  const now = running ? ` · now: ${presentations(op.kind).stepLabel(running)}${running.detail ? ` (${running.detail})` : ''}` : '';
  return `• ${operationRef(op.id, links.get(op.id))} ${title} on *${op.cluster}*: ${op.state}${progress}${now} · requested by <@${op.requestedBy}> ${formatTime(op.createdAt)}${reason}`;
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

/** Where a cluster stands, in words, from what its channel may see: the operation that runs or waits, or idle. */
export function clusterStateWords(
  cluster: { name: string; approvers: readonly string[] },
  holder: string | undefined,
  ops: readonly Operation[],
  presentations: PresentationLookup,
  names?: NodeNames,
): string {
  const { active, recent } = shownOperations(ops);
  const op = active.find((o) => o.id === holder) ?? active[0] ?? ops.find((o) => o.id === holder);
  if (op === undefined) {
    const last = recent[0];
    return last === undefined
      ? 'idle, no operation holds it; no operations yet'
      : `idle, no operation holds it; last: ${what(last, presentations, names)} ${last.state} ${formatTime(last.endedAt ?? last.createdAt)}`;
  }
  const parts = [doing(op, presentations, names)];
  const current = op.steps.findIndex((s) => s.status === 'running' || s.status === 'failed');
  const waitingStep = op.approvals.filter((a) => a.state === 'pending').at(-1);
  const index = waitingStep ? op.steps.findIndex((s) => s.id === waitingStep.step) : current;
  const step = op.steps[index];
  if (step !== undefined) parts.push(`step ${index + 1} of ${op.steps.length}: ${presentations(op.kind).stepLabel(step)}`);
  parts.push(waitingFor(op, cluster.approvers, presentations));
  return parts.filter((p) => p !== '').join(', ');
}

/** `Talos upgrade to v1.13.9 running`, `Terraform change`: what the operation does. */
function doing(op: Operation, presentations: PresentationLookup, names?: NodeNames): string {
  const title = what(op, presentations, names);
  return op.state === 'running' || op.state === 'awaiting-approval' ? `${title} running` : title;
}

function what(op: Operation, presentations: PresentationLookup, names?: NodeNames): string {
  return escapeMrkdwn(operationTitle(op, presentations(op.kind), names));
}

function waitingFor(op: Operation, approvers: readonly string[], presentations: PresentationLookup): string {
  switch (op.state) {
    case 'awaiting-approval':
      return `waiting for approval from ${approvers.map(mention).join(' or ')}`;
    case 'planned':
      return `planned, waiting for its ${presentations(op.kind).startLabel ?? 'Start'}`;
    case 'waiting-window':
      return 'waiting for the maintenance window';
    case 'paused':
      return 'paused: the approval expired';
    case 'preflight':
      return 'preflight running';
    case 'failed':
      return 'stopped at a failure and still holds the cluster';
    default:
      return '';
  }
}

/** Slack's cap on blocks in one message. */
const MAX_BLOCKS = 50;

/**
 * `/talos status` in a cluster's channel: each cluster's state in words first, then its operations,
 * each with buttons (Open thread, Record, and Cancel while it runs or waits), so nobody types an id.
 */
export function statusMessage(
  byCluster: {
    cluster: { name: string; approvers: readonly string[] };
    holder: string | undefined;
    ops: Operation[];
    gate?: { last?: LastGate; declared?: DeclaredState };
    /** Node names by address from the last look at the cluster, for operations that name only an address. */
    names?: NodeNames;
  }[],
  presentations: PresentationLookup,
  links: OperationLinks = NO_LINKS,
): ChatMessage {
  const headlines = byCluster.map(({ cluster, holder, ops, gate, names }) => {
    const words = clusterStateWords(cluster, holder, ops, presentations, names);
    const lock =
      holder === undefined
        ? words.startsWith('idle')
          ? ''
          : '; no operation holds it'
        : ` · locked by ${operationRef(holder, links.get(holder))}`;
    return `*${cluster.name}* — ${words}${lock}${gate === undefined ? '' : gateWords(gate.last, links) + declaredWords(gate.declared)}`;
  });
  const blocks: Block[] = [section(headlines.join('\n'))];
  const lines: string[] = [];
  for (const { cluster, ops, names } of byCluster) {
    const { active, recent } = shownOperations(ops);
    for (const op of [...active, ...recent]) {
      const line = describe(op, presentations, links, names);
      lines.push(line);
      if (blocks.length + 2 > MAX_BLOCKS) continue;
      blocks.push(
        section(line),
        actions(`status-${op.id}`, entryButtons(op, cluster.name, links.get(op.id), operationTitle(op, presentations(op.kind), names))),
      );
    }
  }
  return { text: [...headlines, ...lines].join('\n'), blocks };
}

const VERDICT_WORDS: Record<LastGate['verdict'], string> = {
  passed: '✅ passed',
  warning: '⚠️ passed with warnings',
  failed: '❌ failed',
};

const HELD_WORDS: Record<LastGate['verdict'], string> = { passed: 'passing', warning: 'warning', failed: 'failing' };

/**
 * The newest health gate of a cluster, of any origin (someone's `/talos health`, its schedule, an
 * operation's gate, its final one included), from what every replica keeps in Redis: its verdict,
 * when it ran, who ran it, and since when the verdict has held when that is earlier (a gate failing
 * since yesterday reads differently from one that failed once).
 */
export function gateWords(gate: LastGate | undefined, links: OperationLinks = NO_LINKS): string {
  if (gate === undefined) return '\nLast health gate: none on record; run `/talos health` to see where the cluster stands';
  const at = new Date(gate.at * 1000);
  const held = gate.since < gate.at ? `, ${HELD_WORDS[gate.verdict]} since ${formatTime(new Date(gate.since * 1000))}` : '';
  return `\nLast health gate: ${VERDICT_WORDS[gate.verdict]} ${formatTime(at)}${originWords(gate.origin, links)}${held}`;
}

/** Who ran the gate, as the status line says it. */
function originWords(origin: GateOrigin | undefined, links: OperationLinks): string {
  if (origin === undefined) return '';
  if (origin.by === 'command') return ` · \`/talos health\` by ${mention(origin.user)}`;
  if (origin.by === 'schedule') return ' · the scheduled gate';
  return ` · from ${escapeMrkdwn(origin.title)} (${operationRef(origin.opId, links.get(origin.opId))})`;
}

/**
 * What runs against what Terraform declares, as the last gate found it: drift is said with the exact
 * Terraform change that clears it; a version the bot cannot read says the rule is off.
 */
export function declaredWords(declared: DeclaredState | undefined): string {
  if (declared === undefined) return '';
  if (declared.state === 'match') return '\nDeclared in Terraform: ✅ every node runs the declared Talos and Kubernetes versions';
  if (declared.state === 'drift')
    return `\nDeclared in Terraform: ⚠️ *drift*: ${declared.lines.join('; ')}. To clear it, ${declared.fixes.join('; and ')}`;
  return `\nDeclared in Terraform: ⚠️ not compared: ${declared.lines.join('; ')}`;
}

function entryButtons(op: Operation, cluster: string, link: string | undefined, title: string): ButtonSpec[] {
  const buttons: ButtonSpec[] = [];
  if (link !== undefined) buttons.push({ text: 'Open thread', actionId: STATUS_ACTION.open, value: op.id, url: link });
  buttons.push({ text: 'Record', actionId: STATUS_ACTION.record, value: op.id });
  if (ACTIVE.includes(op.state))
    buttons.push({
      text: 'Cancel',
      actionId: STATUS_ACTION.cancel,
      value: op.id,
      style: 'danger',
      confirm: {
        title: 'Cancel this operation?',
        text: `Stops ${escapeMrkdwn(title)} (\`${op.id}\`) on ${escapeMrkdwn(cluster)} between steps: a step in progress finishes first, nothing is undone.`,
        confirm: 'Cancel it',
        deny: 'Keep it',
      },
    });
  return buttons;
}
