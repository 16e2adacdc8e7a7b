/**
 * The invariants every chaos run must keep, as pure functions over what the run left behind:
 * the simulator's events, the operation record from Redis, the Slack thread and every text
 * that left the bot. Each returns the violations it found, with enough detail to debug.
 */
import { stepLabel } from '../../src/chat/operation-root.ts';
import type { Operation } from '../../src/ops/operation.ts';
import type { SimEvent } from '../sim/index.ts';

export const INVARIANTS = [
  'node-upgraded-twice',
  'control-planes-down-together',
  'upgrade-without-approval',
  'operation-outcome',
  'audit-thread',
  'canary-leak',
] as const;
export type InvariantName = (typeof INVARIANTS)[number];

export interface Violation {
  invariant: InvariantName;
  detail: string;
}

/** A thread reply as the checker needs it: text as first posted (edits keep the `#seq` of an audit reply) and as shown now. */
export interface ThreadReply {
  ts: string;
  firstText: string;
  text: string;
}

export interface RunEvidence {
  cluster: string;
  controlPlanes: readonly string[];
  target: string;
  /** Simulator events of this run only. */
  events: readonly SimEvent[];
  /** The operation as stored in Redis at the end; undefined when it could not be read. */
  op: Operation | undefined;
  /** Whether the driver saw the operation end before its deadline. */
  ended: boolean;
  /** Replies of the operation's thread, oldest first. */
  thread: readonly ThreadReply[];
  /** Talos version of each node in the simulator after the run. */
  versionsAfter: Readonly<Record<string, string>>;
  /** Slack user ids allowed to approve. */
  approvers: readonly string[];
  canary: string;
  /** Every text that left the bot or was stored by it during the run, by where it was found. */
  texts: readonly { source: string; text: string }[];
}

export function nodeUpgradedTwice(e: RunEvidence): Violation[] {
  const counts = new Map<string, number>();
  for (const event of e.events) {
    if (event.cluster !== e.cluster || event.kind !== 'upgrade-start' || event.node === undefined) continue;
    counts.set(event.node, (counts.get(event.node) ?? 0) + 1);
  }
  return [...counts]
    .filter(([, n]) => n > 1)
    .map(([node, n]) => ({ invariant: 'node-upgraded-twice', detail: `${node} was upgraded ${n} times` }));
}

/** A control plane is out of service from the moment its upgrade (or a reboot) begins until it is up again. */
export function controlPlanesDownTogether(e: RunEvidence): Violation[] {
  const down = new Set<string>();
  let worst: { count: number; at: number; nodes: string[] } = { count: 0, at: 0, nodes: [] };
  for (const event of e.events) {
    if (event.cluster !== e.cluster || event.node === undefined || !e.controlPlanes.includes(event.node)) continue;
    if (['upgrade-start', 'reboot', 'rollback', 'reset'].includes(event.kind)) down.add(event.node);
    if (event.kind === 'up') down.delete(event.node);
    if (down.size > worst.count) worst = { count: down.size, at: event.at, nodes: [...down] };
  }
  if (worst.count <= 1) return [];
  return [{ invariant: 'control-planes-down-together', detail: `${worst.count} control planes down at once (${worst.nodes.join(', ')}) at ${new Date(worst.at).toISOString()}` }];
}

/** Every upgrade the simulator accepted was preceded by an approval of that node's step, recorded in the operation by an approver. */
export function upgradeWithoutApproval(e: RunEvidence): Violation[] {
  const out: Violation[] = [];
  for (const event of e.events) {
    if (event.cluster !== e.cluster || event.kind !== 'upgrade-start' || event.node === undefined || !e.controlPlanes.includes(event.node)) continue;
    const approved = (e.op?.approvals ?? []).find(
      (a) => a.step === `node-${event.node}` && a.state === 'approved' && a.by !== undefined && e.approvers.includes(a.by) && a.at !== undefined && Date.parse(a.at) <= event.at,
    );
    if (!approved) out.push({ invariant: 'upgrade-without-approval', detail: `${event.node} was upgraded at ${new Date(event.at).toISOString()} with no approval recorded before` });
  }
  return out;
}

export type Outcome = 'completed' | 'stopped' | 'unfinished';

export function outcomeOf(e: RunEvidence): Outcome {
  if (e.op?.state === 'completed') return 'completed';
  if (e.op?.state === 'failed' || e.op?.state === 'refused') return 'stopped';
  return 'unfinished';
}

/** The operation ends completed (and every node really runs the target), or stopped with its reason in the thread. */
export function operationOutcome(e: RunEvidence): Violation[] {
  const fail = (detail: string): Violation[] => [{ invariant: 'operation-outcome', detail }];
  const op = e.op;
  if (!op) return fail('the operation record could not be read');
  if (!e.ended) return fail(`the operation did not end: it is ${op.state}${op.reason ? ` (${op.reason})` : ''}`);
  if (op.state === 'completed') {
    const off = Object.entries(e.versionsAfter).filter(([, v]) => v !== e.target);
    if (off.length > 0) return fail(`completed, but ${off.map(([n, v]) => `${n} runs ${v}`).join(', ')}`);
    return [];
  }
  if (op.state === 'failed') {
    if (!op.reason) return fail('stopped without a reason');
    if (!e.thread.some((r) => r.text.includes('❌ Stopped') && r.text.includes(op.reason!))) return fail(`stopped (${op.reason}), but the reason is not in its thread`);
    return [];
  }
  if (op.state === 'refused') {
    if (op.refusals.length === 0) return fail('refused without a reason');
    if (!e.thread.some((r) => r.text.includes('preflight refused'))) return fail('refused, but the refusal is not in its thread');
    return [];
  }
  return fail(`the operation ended ${op.state}${op.reason ? ` (${op.reason})` : ''}`);
}

/** What the audit must show for the steps the operation went through, in this order, each once. */
export function expectedMilestones(op: Operation): string[] {
  if (op.state === 'refused') return ['preflight refused'];
  const out = ['preflight passed, plan posted'];
  if (op.startedAt === undefined) return out;
  out.push('started');
  for (const step of op.steps) {
    if (step.status === 'pending') break;
    const approval = op.approvals.filter((a) => a.step === step.id && a.state === 'approved').at(-1);
    if (step.kind === 'upgrade-control-plane' && approval !== undefined) out.push(`approved ${step.node}`);
    out.push(`step started: ${stepLabel(step)}`);
    if (step.status === 'failed') {
      out.push('stopped');
      break;
    }
    if (step.status === 'running') break;
    if (step.kind === 'snapshot') out.push('etcd snapshot taken');
    else if (step.kind === 'verify') out.push('completed');
    else out.push(`${step.status === 'skipped' ? 'skipped' : 'upgraded'}: ${stepLabel(step)}`);
  }
  return out;
}

/** The thread numbers its audit replies 1..N with no gap, duplicate or reordering, and the audit covers every step in order. */
export function auditThread(e: RunEvidence): Violation[] {
  const op = e.op;
  if (!op) return [];
  const out: Violation[] = [];
  const v = (detail: string): void => {
    out.push({ invariant: 'audit-thread', detail });
  };
  const stored = op.audit.map((a) => a.seq);
  if (stored.some((seq, i) => seq !== i + 1)) v(`the stored audit is numbered ${stored.join(',')}`);
  // A reply carries one entry per line, so a step costs one message: every line counts.
  const posted = e.thread.flatMap((r) => [...r.firstText.matchAll(/^#(\d+) /gm)].map((m) => Number(m[1])));
  const seen = new Set<number>();
  for (const [i, seq] of posted.entries()) {
    if (seen.has(seq)) v(`#${seq} is posted more than once`);
    else if (i > 0 && seq < posted[i - 1]!) v(`#${seq} is posted after #${posted[i - 1]}`);
    seen.add(seq);
  }
  const missing = stored.filter((seq) => !seen.has(seq));
  if (missing.length > 0) v(`${missing.map((s) => `#${s}`).join(', ')} of ${stored.length} never reached the thread`);
  const extra = [...seen].filter((seq) => seq > stored.length);
  if (extra.length > 0) v(`${extra.map((s) => `#${s}`).join(', ')} in the thread but not in the stored audit (${stored.length} entries)`);
  // The steps: each milestone once, in the order of the plan.
  const events = op.audit.map((a) => a.event);
  let cursor = 0;
  for (const milestone of expectedMilestones(op)) {
    const count = events.filter((ev) => ev === milestone).length;
    if (count === 0) {
      v(`the audit has no "${milestone}"`);
      continue;
    }
    if (count > 1) v(`the audit has "${milestone}" ${count} times`);
    const at = events.indexOf(milestone, cursor);
    if (at < 0) v(`"${milestone}" is out of order`);
    else cursor = at + 1;
  }
  return out;
}

export function canaryLeak(e: RunEvidence): Violation[] {
  return e.texts
    .filter((t) => t.text.includes(e.canary))
    .map((t) => ({ invariant: 'canary-leak', detail: `the credential canary appears in ${t.source}` }));
}

export function checkInvariants(e: RunEvidence): Violation[] {
  return [
    ...nodeUpgradedTwice(e),
    ...controlPlanesDownTogether(e),
    ...upgradeWithoutApproval(e),
    ...operationOutcome(e),
    ...auditThread(e),
    ...canaryLeak(e),
  ];
}
