/**
 * The invariants every chaos run must keep, as pure functions over what the run left behind:
 * the simulator's events and talosctl calls, the operation records from Redis, the cluster's
 * inventory entry, the Slack thread and every text that left the bot. Each returns the
 * violations it found, with enough detail to debug.
 */
import { z } from 'zod';
import { presentationOf } from '../../jobs/playbooks/index.ts';

/** A step as its operation's kind labels it in the audit (`step started: <label>`). */
const stepLabel = (op: Pick<RecordedOperation, 'kind'>, step: RecordedStep): string => presentationOf(op.kind).stepLabel(step);
import { Approval, OperationFields, Step } from '../../src/ops/operation.ts';
import { windowStatus, type WindowPolicy } from '../../src/rules/maintenance-window.ts';
import type { CallRecord, SimEvent } from '../sim/index.ts';

export const INVARIANTS = [
  'node-upgraded-twice',
  'control-planes-down-together',
  'upgrade-without-approval',
  'rollback-without-approval',
  'gated-call-without-fresh-approval',
  'step-outside-window',
  'operation-outcome',
  'audit-thread',
  'canary-leak',
  'bot-process-ended',
  'ready-without-slack',
  'transient-stop-not-resumed',
  'retry-reissued-upgrade',
  'mutating-call-without-lock',
  'tofu-apply-without-fresh-apply',
  'second-bootstrap-recover-from',
  'reset-without-two-approvers',
] as const;
export type InvariantName = (typeof INVARIANTS)[number];

export interface Violation {
  invariant: InvariantName;
  detail: string;
}

/**
 * An operation as stored, read with two fields the checks need whether or not the bot's own
 * schema has them yet: a step's `windowOverride` (an approver's word to start it outside the
 * maintenance window) and the approval state `spent` (consumed by an attempt that then failed or was retried).
 */
export const RecordedStep = Step.extend({ windowOverride: z.object({ by: z.string(), at: z.string() }).optional() });
export type RecordedStep = z.infer<typeof RecordedStep>;
export const RecordedApproval = Approval.extend({ state: Approval.shape.state.or(z.literal('spent')) });
export type RecordedApproval = z.infer<typeof RecordedApproval>;
export const RecordedOperation = OperationFields.extend({
  steps: z.array(RecordedStep).default([]),
  approvals: z.array(RecordedApproval).default([]),
});
export type RecordedOperation = z.infer<typeof RecordedOperation>;

/** Approvals that let a gated step run: `spent` ones did too, for the attempt that consumed them. */
const authorising = (a: RecordedApproval): a is RecordedApproval & { at: string } =>
  (a.state === 'approved' || a.state === 'spent') && a.at !== undefined;

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
  /** Simulator calls (talosctl, tofu) of this run only. */
  calls: readonly CallRecord[];
  /** The operation as stored in Redis at the end; undefined when it could not be read. */
  op: RecordedOperation | undefined;
  /** Every operation on the cluster created during the run, as stored at the end (`op` among them). */
  operations: readonly RecordedOperation[];
  /** The cluster's inventory entry: where maintenance windows are declared. */
  inventory: WindowPolicy;
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
  /** Times the bot process ended by itself during the run (not stopped or killed by the driver or a fault). */
  botExits?: number;
  /** `/readyz` answers taken while Slack's Socket Mode was away and the bot had already tried to reconnect. */
  readyWhileSlackAway?: readonly { at: number; status: number }[];
  /** Whether the run's fault was transient: gone by itself once cleared, so a stop it caused must be resumed by Retry. */
  transient?: boolean;
  /** Each Retry click of the driver, with what every control plane ran at that moment. */
  retryClicks?: readonly RetryClick[];
  /**
   * When a fault took the operation's cluster lock away (Redis lost its data): from then on it holds nothing.
   * `op` and `operations` are then the records as the driver last read them before the loss.
   */
  lockLostAt?: number;
}

/** What a node ran when a Retry was clicked, as the simulator had it. */
export interface NodeSeen {
  version: string;
  bootId: string;
  /** The simulator's stage: anything but `running` means the node is between boots. */
  stage: string;
}

/** A Retry click of the driver: when, which stop it answered, and each control plane as it was then. */
export interface RetryClick {
  at: number;
  nonce: string;
  nodes: Readonly<Record<string, NodeSeen>>;
}

/** Retries the driver clicks for one run at most: a transient stop needs one, a few leave room for a second stop. */
export const MAX_RETRIES = 3;

/** Events that start something on a node, or end it: what a node's upgrade state is read from. */
const NODE_MOVES = ['upgrade-start', 'upgrade-failed', 'reboot', 'rollback', 'reset', 'up', 'lost'] as const;

/**
 * Images each node installed and rebooted into: the reboot of an accepted upgrade sequence (a
 * silent revert counts, the image was installed; the reboot into the old slot after the
 * installer's preflight refused does not). A request that never reached the node, or that it
 * refused, installs nothing.
 */
export function installsByNode(e: Pick<RunEvidence, 'cluster' | 'events'>): Map<string, number> {
  const counts = new Map<string, number>();
  const last = new Map<string, string>();
  for (const event of e.events) {
    if (event.cluster !== e.cluster || event.node === undefined || !(NODE_MOVES as readonly string[]).includes(event.kind)) continue;
    if (event.kind === 'reboot' && last.get(event.node) === 'upgrade-start') counts.set(event.node, (counts.get(event.node) ?? 0) + 1);
    last.set(event.node, event.kind);
  }
  return counts;
}

export function nodeUpgradedTwice(e: RunEvidence): Violation[] {
  const accepted = (node: string): number =>
    e.events.filter((ev) => ev.cluster === e.cluster && ev.kind === 'upgrade-start' && ev.node === node).length;
  return [...installsByNode(e)]
    .filter(([, n]) => n > 1)
    .map(([node, n]) => ({
      invariant: 'node-upgraded-twice',
      detail: `${node} installed an image and rebooted ${n} times (${accepted(node)} upgrade request(s) accepted)`,
    }));
}

/** A control plane is out of service from the moment its upgrade (or a reboot) begins until it is up again. */
export function controlPlanesDownTogether(e: RunEvidence): Violation[] {
  const down = new Set<string>();
  let worst: { count: number; at: number; nodes: string[] } = { count: 0, at: 0, nodes: [] };
  for (const event of e.events) {
    if (event.cluster !== e.cluster || event.node === undefined || !e.controlPlanes.includes(event.node)) continue;
    // A failed machine is down until its replacement boots: the bot must take no other control plane down meanwhile.
    if (['upgrade-start', 'reboot', 'rollback', 'reset', 'machine-failed', 'vm-replaced'].includes(event.kind)) down.add(event.node);
    if (event.kind === 'up') down.delete(event.node);
    if (down.size > worst.count) worst = { count: down.size, at: event.at, nodes: [...down] };
  }
  if (worst.count <= 1) return [];
  return [
    {
      invariant: 'control-planes-down-together',
      detail: `${worst.count} control planes down at once (${worst.nodes.join(', ')}) at ${new Date(worst.at).toISOString()}`,
    },
  ];
}

/** Every upgrade the simulator accepted was preceded by an approval of that node's step, recorded in the operation by an approver. */
export function upgradeWithoutApproval(e: RunEvidence): Violation[] {
  const out: Violation[] = [];
  for (const event of e.events) {
    if (event.cluster !== e.cluster || event.kind !== 'upgrade-start' || event.node === undefined || !e.controlPlanes.includes(event.node))
      continue;
    const approved = (e.op?.approvals ?? []).find(
      (a) =>
        a.step === `node-${event.node}` &&
        authorising(a) &&
        a.by !== undefined &&
        e.approvers.includes(a.by) &&
        Date.parse(a.at) <= event.at,
    );
    if (!approved)
      out.push({
        invariant: 'upgrade-without-approval',
        detail: `${event.node} was upgraded at ${new Date(event.at).toISOString()} with no approval recorded before`,
      });
  }
  return out;
}

/** The command path of a recorded talosctl call: the bot puts it before every flag. */
const isTalosctl = (call: CallRecord, command: string, cluster: string): boolean =>
  call.bin === 'talosctl' && call.cluster === cluster && call.argv[0] === command;

/** The nodes a talosctl call names with `--nodes`/`-n` (comma-separated, or repeated). */
export function nodesOf(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (const [i, arg] of argv.entries()) {
    const inline = /^(?:--nodes|-n)=(.*)$/.exec(arg);
    const value = inline ? inline[1] : arg === '--nodes' || arg === '-n' ? argv[i + 1] : undefined;
    if (value !== undefined) out.push(...value.split(',').filter((n) => n !== ''));
  }
  return out;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** Every `talosctl rollback` that reached the cluster rests on a rollback operation an approver approved before the call. */
export function rollbackWithoutApproval(e: RunEvidence): Violation[] {
  const out: Violation[] = [];
  for (const call of e.calls.filter((c) => isTalosctl(c, 'rollback', e.cluster))) {
    const nodes = nodesOf(call.argv);
    const approved = e.operations.some(
      (op) =>
        op.kind === 'node-rollback' &&
        op.cluster === e.cluster &&
        (op.target.node === undefined || nodes.includes(op.target.node)) &&
        op.approvals.some((a) => authorising(a) && Date.parse(a.at) < call.startedAt),
    );
    if (!approved)
      out.push({
        invariant: 'rollback-without-approval',
        detail: `talosctl rollback reached ${nodes.join(', ') || 'the cluster'} at ${iso(call.startedAt)} with no approved node-rollback operation before it`,
      });
  }
  return out;
}

/** Where an attempt at a step ended: the step failed, or a Retry re-ran it. */
export interface AttemptEnd {
  at: number;
  what: string;
}

/**
 * Where attempts at a step ended, unordered: each `stopped` audit entry while it was the step
 * last started, its own end while it is still `failed`, and each Retry from it or from an
 * earlier step (a Retry re-runs every step from the one it names, each with a fresh approval).
 */
export function attemptEnds(op: RecordedOperation, stepId: string): AttemptEnd[] {
  const index = op.steps.findIndex((s) => s.id === stepId);
  const step = op.steps[index];
  if (!step) return [];
  const started = `step started: ${stepLabel(op, step)}`;
  const out: AttemptEnd[] = [];
  let current: string | undefined;
  for (const entry of [...op.audit].sort((a, b) => a.seq - b.seq)) {
    const retry = /^retry requested from (\S+)$/.exec(entry.event);
    if (entry.event.startsWith('step started: ')) current = entry.event;
    else if (entry.event === 'stopped' && current === started) out.push({ at: Date.parse(entry.at), what: 'failed' });
    else if (retry) {
      const from = op.steps.findIndex((s) => s.id === retry[1]);
      if (from >= 0 && from <= index) out.push({ at: Date.parse(entry.at), what: `was retried from ${retry[1]}` });
    }
  }
  if (step.status === 'failed' && step.endedAt !== undefined) out.push({ at: Date.parse(step.endedAt), what: 'failed' });
  return out;
}

/**
 * Every `talosctl upgrade` of a control plane was authorised by an approval of that node's step
 * given before the call and after the step's last attempt ended (it failed, or a Retry re-ran
 * it): an approval does not carry over to the next attempt, and a `spent` one authorised only
 * calls of the attempt that then ended.
 */
export function gatedCallWithoutFreshApproval(e: RunEvidence): Violation[] {
  const out: Violation[] = [];
  const v = (detail: string): void => {
    out.push({ invariant: 'gated-call-without-fresh-approval', detail });
  };
  /** The call rests on an approval of `stepId` of `op` given after that step's last attempt ended. */
  const judge = (op: RecordedOperation, stepId: string, what: string, at: number): void => {
    const ends = attemptEnds(op, stepId);
    const lastEnd = ends
      .filter((end) => end.at < at)
      .sort((a, b) => a.at - b.at)
      .at(-1);
    const approval = op.approvals
      .filter(authorising)
      .filter((a) => a.step === stepId && Date.parse(a.at) <= at)
      .sort((a, b) => Date.parse(a.at) - Date.parse(b.at))
      .at(-1);
    if (!approval) v(`${what}: ${op.id} has no approval of ${stepId} before it`);
    else if (lastEnd !== undefined && Date.parse(approval.at) <= lastEnd.at)
      v(`${what}: the latest approval (${approval.at}) came before ${stepId} ${lastEnd.what} at ${iso(lastEnd.at)}`);
    else if (approval.state === 'spent' && !ends.some((end) => end.at >= at))
      v(`${what}: the approval of ${approval.at} is spent, and no failure or Retry of ${stepId} follows the call`);
  };
  for (const call of e.calls.filter((c) => isTalosctl(c, 'upgrade', e.cluster))) {
    for (const node of nodesOf(call.argv).filter((n) => e.controlPlanes.includes(n))) {
      const stepId = `node-${node}`;
      const what = `talosctl upgrade of ${node} at ${iso(call.startedAt)}`;
      const op = e.operations
        .filter((o) => o.cluster === e.cluster && Date.parse(o.createdAt) <= call.startedAt && o.steps.some((s) => s.id === stepId))
        .at(-1);
      if (!op) v(`${what}: no operation has a step ${stepId}`);
      else judge(op, stepId, what, call.startedAt);
    }
  }
  // A replacement's `etcd remove-member` rests on a fresh approval of its member-removal step, as an upgrade does.
  for (const call of e.calls.filter((c) => isTalosctl(c, 'etcd', e.cluster) && c.argv[1] === 'remove-member')) {
    const what = `talosctl etcd remove-member ${call.argv[2] ?? '?'} at ${iso(call.startedAt)}`;
    const op = e.operations
      .filter(
        (o) => o.cluster === e.cluster && Date.parse(o.createdAt) <= call.startedAt && o.steps.some((s) => s.kind === 'remove-member'),
      )
      .at(-1);
    const step = op?.steps.find((s) => s.kind === 'remove-member');
    if (!op || !step) v(`${what}: no operation has a member-removal step`);
    else judge(op, step.id, what, call.startedAt);
  }
  return out;
}

/**
 * A production cluster that declares maintenance windows (and does not allow work outside them)
 * starts every step inside a window, unless an approver overrode the window for that step
 * before it started.
 */
export function stepOutsideWindow(e: RunEvidence): Violation[] {
  const { environment, maintenanceWindows, allowOutsideWindows } = e.inventory;
  if (environment !== 'production' || maintenanceWindows === 'always' || maintenanceWindows.length === 0 || allowOutsideWindows) return [];
  const out: Violation[] = [];
  for (const op of e.operations.filter((o) => o.cluster === e.cluster)) {
    for (const step of op.steps) {
      if (step.startedAt === undefined) continue;
      const startedAt = new Date(step.startedAt);
      if (windowStatus(maintenanceWindows, startedAt).inside) continue;
      const override = step.windowOverride;
      if (override && e.approvers.includes(override.by) && Date.parse(override.at) <= startedAt.getTime()) continue;
      const why = !override
        ? 'with no override'
        : !e.approvers.includes(override.by)
          ? `overridden by ${override.by}, who is not an approver`
          : `overridden only at ${override.at}, after it started`;
      out.push({
        invariant: 'step-outside-window',
        detail: `${op.id} started ${step.id} at ${step.startedAt}, outside every maintenance window, ${why}`,
      });
    }
  }
  return out;
}

export type Outcome = 'completed' | 'stopped' | 'unfinished';

export function outcomeOf(e: RunEvidence): Outcome {
  if (e.op?.state === 'completed') return 'completed';
  if (e.op?.state === 'failed' || e.op?.state === 'refused') return 'stopped';
  // Redis lost the record: the bot halts and acts no more, which is the stop this fault asks for.
  if (e.lockLostAt !== undefined) return 'stopped';
  return 'unfinished';
}

/** The operation ends completed (and every node really runs the target), or stopped with its reason in the thread. */
export function operationOutcome(e: RunEvidence): Violation[] {
  const fail = (detail: string): Violation[] => [{ invariant: 'operation-outcome', detail }];
  const op = e.op;
  // Redis lost the record with everything else: nothing is left to end, and the bot must only refuse to go on.
  if (e.lockLostAt !== undefined) return [];
  if (!op) return fail('the operation record could not be read');
  if (!e.ended) return fail(`the operation did not end: it is ${op.state}${op.reason ? ` (${op.reason})` : ''}`);
  if (op.state === 'completed') {
    const off = Object.entries(e.versionsAfter).filter(([, v]) => v !== e.target);
    if (off.length > 0) return fail(`completed, but ${off.map(([n, v]) => `${n} runs ${v}`).join(', ')}`);
    return [];
  }
  if (op.state === 'failed') {
    if (!op.reason) return fail('stopped without a reason');
    if (!e.thread.some((r) => r.text.includes('❌ Stopped') && r.text.includes(op.reason!)))
      return fail(`stopped (${op.reason}), but the reason is not in its thread`);
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
export function expectedMilestones(op: RecordedOperation): string[] {
  if (op.state === 'refused') return ['preflight refused'];
  const out = ['preflight passed, plan posted'];
  if (op.startedAt === undefined) return out;
  out.push('started');
  for (const step of op.steps) {
    if (step.status === 'pending') break;
    const approval = op.approvals.filter((a) => a.step === step.id && authorising(a)).at(-1);
    if (step.kind === 'upgrade-control-plane' && approval !== undefined) out.push(`approved ${step.node}`);
    out.push(`step started: ${stepLabel(op, step)}`);
    if (step.status === 'failed') {
      out.push('stopped');
      break;
    }
    if (step.status === 'running') break;
    // Other playbooks name each step's end by what it found (a member removed, a plan reviewed): only their starts are held to.
    if (op.kind !== 'talos-upgrade') continue;
    if (step.kind === 'snapshot') out.push('etcd snapshot taken');
    else if (step.kind === 'verify') out.push('completed');
    else out.push(`${step.status === 'skipped' ? 'skipped' : 'upgraded'}: ${stepLabel(op, step)}`);
  }
  if (op.kind !== 'talos-upgrade' && op.state === 'completed') out.push('completed');
  return out;
}

/**
 * Milestones a Retry may repeat, with how many more times: each Retry re-runs its step and every
 * step after it, so their approvals, starts and ends (and the stop that led to it) may appear once more.
 */
export function rerunMilestones(op: RecordedOperation): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of op.audit) {
    const retry = /^retry requested from (\S+)$/.exec(entry.event);
    if (!retry) continue;
    const from = op.steps.findIndex((s) => s.id === retry[1]);
    const bump = (m: string): void => {
      out.set(m, (out.get(m) ?? 0) + 1);
    };
    bump('stopped');
    for (const step of from < 0 ? [] : op.steps.slice(from)) {
      if (step.node !== undefined) bump(`approved ${step.node}`);
      bump(`step started: ${stepLabel(op, step)}`);
      bump(`upgraded: ${stepLabel(op, step)}`);
      bump(`skipped: ${stepLabel(op, step)}`);
      if (step.kind === 'snapshot') bump('etcd snapshot taken');
    }
  }
  return out;
}

/** The thread numbers its audit replies 1..N with no gap, duplicate or reordering, and the audit covers every step in order. */
export function auditThread(e: RunEvidence): Violation[] {
  const op = e.op;
  // A record Redis lost is known only as last read, mid-write: there is no final audit to hold the thread to.
  if (!op || e.lockLostAt !== undefined) return [];
  const out: Violation[] = [];
  const v = (detail: string): void => {
    out.push({ invariant: 'audit-thread', detail });
  };
  const stored = op.audit.map((a) => a.seq);
  if (stored.some((seq, i) => seq !== i + 1)) v(`the stored audit is numbered ${stored.join(',')}`);
  // A reply carries one entry per line, so a step costs one message: every line counts. An approval
  // request leads the reply that carries the entries before it, so a reply's lines count in number order.
  const posted = e.thread.flatMap((r) => [...r.firstText.matchAll(/^#(\d+) /gm)].map((m) => Number(m[1])).sort((a, b) => a - b));
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
  // The steps: each milestone once, in the order of the plan; a Retry runs the steps from the one it names once more.
  const events = op.audit.map((a) => a.event);
  const again = rerunMilestones(op);
  let cursor = 0;
  for (const milestone of expectedMilestones(op)) {
    const count = events.filter((ev) => ev === milestone).length;
    if (count === 0) {
      v(`the audit has no "${milestone}"`);
      continue;
    }
    const allowed = 1 + (again.get(milestone) ?? 0);
    if (count > allowed) v(`the audit has "${milestone}" ${count} times${allowed > 1 ? `, more than its ${allowed} attempts` : ''}`);
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

/** Nothing but a stop or a kill ends the bot: an outage of Slack or Redis is waited out, with any talosctl or tofu child still running. */
export function botProcessEnded(e: RunEvidence): Violation[] {
  const exits = e.botExits ?? 0;
  return exits === 0 ? [] : [{ invariant: 'bot-process-ended', detail: `the bot process ended by itself ${exits} time(s) during the run` }];
}

/** A bot without its Slack connection takes no commands, so `/readyz` says not ready while Slack is away. */
export function readyWithoutSlack(e: RunEvidence): Violation[] {
  return (e.readyWhileSlackAway ?? [])
    .filter((sample) => sample.status === 200)
    .slice(0, 1)
    .map((sample) => ({
      invariant: 'ready-without-slack',
      detail: `/readyz answered 200 at ${iso(sample.at)}, while Slack's Socket Mode was away and the bot had no connection`,
    }));
}

/**
 * A stop the run's transient fault caused ends completed once the fault is gone: the driver
 * clicked Retry (at most {@link MAX_RETRIES} times) and drove the approvals to the end. A run
 * whose stop offered no Retry is not judged here: it is counted apart in the summary
 * ("stopped, no retry offered"), as is a preflight refusal, which a new command answers.
 */
export function transientStopNotResumed(e: RunEvidence): Violation[] {
  const op = e.op;
  if (!e.transient || !op || op.state !== 'failed' || op.retry?.state !== 'offered') return [];
  const clicks = new Set((e.retryClicks ?? []).map((c) => c.nonce)).size;
  return [
    {
      invariant: 'transient-stop-not-resumed',
      detail: `the fault was transient and cleared, yet ${op.id} is still stopped (${op.reason ?? 'no reason'}) with a Retry offered, after ${clicks} Retry click(s)`,
    },
  ];
}

/**
 * No Retry sends `talosctl upgrade` to a node that already runs the target, or whose upgrade
 * state is unknown (an accepted upgrade or a reboot with no boot seen after it). The node's state
 * at each call is what the simulator had at the Retry click, moved on by the boots it recorded
 * between the click and the call.
 */
export function retryReissuedUpgrade(e: RunEvidence): Violation[] {
  const clicks = [...(e.retryClicks ?? [])].sort((a, b) => a.at - b.at);
  const out: Violation[] = [];
  for (const [i, click] of clicks.entries()) {
    const until = clicks[i + 1]?.at ?? Number.POSITIVE_INFINITY;
    const upgrades = e.calls.filter((c) => isTalosctl(c, 'upgrade', e.cluster) && c.startedAt > click.at && c.startedAt < until);
    for (const call of upgrades) {
      for (const node of nodesOf(call.argv)) {
        const seen = click.nodes[node];
        if (!seen) continue;
        const moves = e.events.filter(
          (ev) =>
            ev.cluster === e.cluster && ev.node === node && ev.at < call.startedAt && (NODE_MOVES as readonly string[]).includes(ev.kind),
        );
        const lastMove = moves.at(-1);
        const version = moves.filter((ev) => ev.kind === 'up' && ev.at > click.at).at(-1)?.toVersion ?? seen.version;
        const unknown = lastMove === undefined ? seen.stage !== 'running' : lastMove.kind !== 'up';
        const what = `talosctl upgrade of ${node} at ${iso(call.startedAt)}, after the Retry of ${iso(click.at)}`;
        if (version === e.target) out.push({ invariant: 'retry-reissued-upgrade', detail: `${what}: ${node} already ran ${e.target}` });
        else if (unknown)
          out.push({
            invariant: 'retry-reissued-upgrade',
            detail: `${what}: the upgrade state of ${node} was unknown (${lastMove ? `${lastMove.kind} at ${iso(lastMove.at)}` : seen.stage}, and no boot since)`,
          });
      }
    }
  }
  return out;
}

/** talosctl subcommands that change a node; etcd ones count with their second word. */
const MUTATING_TALOSCTL = ['upgrade', 'upgrade-k8s', 'reboot', 'reset', 'rollback', 'apply-config', 'patch', 'shutdown'];
const MUTATING_ETCD = ['leave', 'remove-member', 'forfeit-leadership'];

/** A call that changes the cluster, as `bin subcommand`; undefined for a read. */
function mutation(call: CallRecord): string | undefined {
  const [first, second] = call.argv;
  if (call.bin === 'tofu') return first === 'apply' || first === 'destroy' ? `tofu ${first}` : undefined;
  if (MUTATING_TALOSCTL.includes(first ?? '')) return `talosctl ${first}`;
  return first === 'etcd' && MUTATING_ETCD.includes(second ?? '') ? `talosctl etcd ${second}` : undefined;
}

/**
 * No call that changes the cluster (talosctl upgrade, reboot, reset, rollback, tofu apply, a Node
 * deletion) while the operation does not hold its cluster: before Start took the lock, after an
 * ending that gave it back, or after Redis lost it. A call already in flight when the lock went is
 * not one: it was sent while the lock was held.
 */
export function mutatingCallWithoutLock(e: RunEvidence): Violation[] {
  const unheld: { from: number; to: number; why: string }[] = [];
  const op = e.op;
  if (op?.startedAt !== undefined) unheld.push({ from: -Infinity, to: Date.parse(op.startedAt) - 1, why: 'before Start took the cluster' });
  if (op?.endedAt !== undefined && (op.state === 'completed' || op.state === 'cancelled'))
    unheld.push({ from: Date.parse(op.endedAt) + 1, to: Infinity, why: `after the operation ended ${op.state} and gave the cluster back` });
  if (e.lockLostAt !== undefined) unheld.push({ from: e.lockLostAt, to: Infinity, why: 'after Redis lost the cluster lock' });
  const why = (at: number): string | undefined => unheld.find((s) => s.from <= at && at <= s.to)?.why;
  const out: Violation[] = [];
  for (const call of e.calls) {
    const what = call.cluster === e.cluster ? mutation(call) : undefined;
    const when = what === undefined ? undefined : why(call.startedAt);
    if (what !== undefined && when !== undefined)
      out.push({
        invariant: 'mutating-call-without-lock',
        detail: `${what} on ${nodesOf(call.argv).join(',') || e.cluster} at ${iso(call.startedAt)}, ${when}`,
      });
  }
  for (const event of e.events) {
    const when = event.cluster === e.cluster && event.kind === 'node-deleted' ? why(event.at) : undefined;
    if (when !== undefined)
      out.push({ invariant: 'mutating-call-without-lock', detail: `Node ${event.node ?? '?'} deleted at ${iso(event.at)}, ${when}` });
  }
  return out;
}

/**
 * Every `tofu apply` rests on an Apply given after its operation's last failure: the approver's Apply
 * click that started it, or an approval of its apply step (kind `tofu-apply`) after a failure or a
 * Retry spent that click, given before the call and after the last stop that preceded it. The call's
 * operation is the one whose id names the plan file's directory, else the latest Terraform change
 * on the cluster created before it.
 */
export function tofuApplyWithoutFreshApply(e: RunEvidence): Violation[] {
  const out: Violation[] = [];
  const applies = e.calls.filter((c) => c.bin === 'tofu' && c.cluster === e.cluster && c.argv[0] === 'apply');
  for (const call of applies) {
    const what = `tofu apply at ${iso(call.startedAt)}`;
    const planDirs = (call.argv.at(-1) ?? '').split(/[\\/]/);
    // A node replacement applies its reviewed replace plan as a Terraform change does.
    const changes = e.operations.filter((o) => o.cluster === e.cluster && ['terraform-apply', 'node-replace'].includes(o.kind));
    const op =
      changes.find((o) => planDirs.includes(o.id)) ??
      changes
        .filter((o) => Date.parse(o.createdAt) <= call.startedAt)
        .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt))
        .at(-1);
    if (!op) {
      out.push({ invariant: 'tofu-apply-without-fresh-apply', detail: `${what}: no Terraform change of ${e.cluster} precedes it` });
      continue;
    }
    const before = (at: string): boolean => Date.parse(at) <= call.startedAt;
    const applySteps = op.steps.filter((s) => s.kind === 'tofu-apply').map((s) => s.id);
    const given = [
      ...op.audit.filter((a) => a.event === 'applied' && before(a.at)).map((a) => ({ at: Date.parse(a.at), by: a.actor })),
      ...op.approvals
        .filter(authorising)
        .filter((a) => applySteps.includes(a.step) && before(a.at))
        .map((a) => ({ at: Date.parse(a.at), by: a.by ?? '?' })),
    ].sort((a, b) => a.at - b.at);
    const lastStop = op.audit
      .filter((a) => a.event === 'stopped' && Date.parse(a.at) < call.startedAt)
      .map((a) => Date.parse(a.at))
      .sort((a, b) => a - b)
      .at(-1);
    const latest = given.at(-1);
    if (latest === undefined)
      out.push({
        invariant: 'tofu-apply-without-fresh-apply',
        detail: `${what}: ${op.id} has no Apply or approval of its apply before it`,
      });
    else if (lastStop !== undefined && latest.at <= lastStop)
      out.push({
        invariant: 'tofu-apply-without-fresh-apply',
        detail: `${what}: the latest Apply of ${op.id} (${latest.by} at ${iso(latest.at)}) came before its stop at ${iso(lastStop)}`,
      });
  }
  return out;
}

export function checkInvariants(e: RunEvidence): Violation[] {
  return [
    ...botProcessEnded(e),
    ...readyWithoutSlack(e),
    ...nodeUpgradedTwice(e),
    ...controlPlanesDownTogether(e),
    ...upgradeWithoutApproval(e),
    ...rollbackWithoutApproval(e),
    ...gatedCallWithoutFreshApproval(e),
    ...stepOutsideWindow(e),
    ...operationOutcome(e),
    ...auditThread(e),
    ...canaryLeak(e),
    ...transientStopNotResumed(e),
    ...retryReissuedUpgrade(e),
    ...mutatingCallWithoutLock(e),
    ...tofuApplyWithoutFreshApply(e),
  ];
}
