import type { Approval, Operation, Step } from '../ops/operation.ts';
import type { Block, ChatMessage } from '../port/chat-port.ts';
import {
  actions,
  context,
  escapeMrkdwn,
  formatTime,
  mention,
  mentionUser,
  plainTime,
  section,
  truncate,
  type ButtonSpec,
} from './blocks.ts';
import { ACTION, buttonValue } from './buttons.ts';
import type { Presentation } from './presentation.ts';
import { roughDuration as spanWords } from '../time/rough-duration.ts';

/** What a Talos upgrade's request shows of its node, besides the question. */
export interface ApprovalContext {
  step: Step;
  version: string;
  /** etcd in words, e.g. `3 of 3 healthy, one leader: quorum holds while this node reboots`. */
  etcdWords: string;
  /** The full etcd table, posted as its own reply before the request. */
  etcdEvidence: string[];
  /** The fault tolerance while the node reboots: `etcd 2 of 3: no further failure tolerated, about 5 min`. */
  whileDown?: string;
  /** What draining the node does, as the gate before the start found it: a database primary that moves, a volume that degrades. */
  effects?: string[];
  /** Who asked for the operation and who started it, by the names people see (never a mention: the card pages only approvers). */
  people?: { asked: string; started?: string };
}

/**
 * An approval request as a playbook builds it: the card (question, facts, buttons), and the evidence
 * too long for a phone (the full etcd table): a file attached to the thread, named by one line of the
 * thread before the card.
 */
export interface ApprovalRequest extends ChatMessage {
  evidence?: { event: string; message: ChatMessage; file: { filename: string; title: string; content: string } };
}

/** The etcd table seen before `name`'s approval: a line in the thread, the table in the attached file. */
function etcdEvidence(name: string, lines: readonly string[], at: string): NonNullable<ApprovalRequest['evidence']> {
  const filename = `etcd-before-${name}-${at.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}.txt`;
  const text = `etcd before ${name}: the table is in the attached ${filename}`;
  return {
    event: `etcd before ${name}`,
    message: { text, blocks: [section(escapeMrkdwn(text))] },
    file: { filename, title: `etcd before ${name}`, content: `${lines.join('\n')}\n` },
  };
}

/** A node as a request names it: `talos-cp-2 (10.0.30.12)`. */
function nodeRef(step: Step): string {
  return `${step.nodeName ? `${step.nodeName} ` : ''}(${step.node ?? '?'})`;
}

/**
 * What an approval is asked for, in the words of its operation's kind: `the upgrade of control plane
 * talos-cp-2 (10.0.30.12) to v1.12.1`, `the Kubernetes upgrade of production 1.34.1 → 1.34.2`. A kind
 * that declares no approval wording names the step.
 */
export function approvalSubject(op: Operation, step: Step, presentation: Presentation): string {
  return presentation.approval?.subject(op, step) ?? `${presentation.stepLabel(step)} on ${op.cluster}`;
}

/** The question a request asks, first in its card: `Approve the upgrade of … to v1.12.1?` */
export function approvalQuestion(op: Operation, step: Step, presentation: Presentation): string {
  return `${presentation.approval?.verb ?? 'Approve'} ${approvalSubject(op, step, presentation)}?`;
}

/** A time as a phone reads it in a notification, where Slack's date tokens do not render: `03:50 UTC`. */
function clockTime(time: string): string {
  return plainTime(time).slice(11);
}

/**
 * When a request expires, on one clock everywhere (the card, its notification, the reminder): the time left
 * from `now` and the UTC time, `expires in 58 min · 21:54 UTC`.
 */
export function expiryWords(expiresAt: string, now: string | Date): string {
  const left = Date.parse(expiresAt) - (typeof now === 'string' ? Date.parse(now) : now.getTime());
  return `expires in ${spanWords(left)} · ${clockTime(expiresAt)}`;
}

/** `node 2 of 5`: the step's place among the operation's node steps. */
export function nodePosition(op: Operation, step: Step): string {
  const nodes = op.steps.filter((s) => s.node !== undefined);
  return `node ${nodes.findIndex((s) => s.id === step.id) + 1} of ${nodes.length}`;
}

/**
 * What a notification shows: the cluster, where in the operation the request stands, the short
 * question and when it expires, e.g. `🔐 production · control plane 1 of 3 · approve talos-prd-cp-1 → Talos v1.13.9? (expires 03:50 UTC)`.
 */
export function approvalNotification(op: Operation, step: Step, approval: Approval, presentation: Presentation): string {
  const headline = presentation.approval?.headline?.(op, step) ?? { what: presentation.name, ask: approvalSubject(op, step, presentation) };
  const verb = (presentation.approval?.verb ?? 'Approve').toLowerCase();
  return `🔐 ${op.cluster} · ${headline.what} · ${verb} ${headline.ask}? (${expiryWords(approval.expiresAt, approval.requestedAt)})`;
}

/** `3 of 5`: the step's place among the operation's steps of its kind. */
export function positionOf(op: Operation, step: Step): string {
  const same = op.steps.filter((s) => s.kind === step.kind);
  return `${same.findIndex((s) => s.id === step.id) + 1} of ${same.length}`;
}

/** A duration as a person says it: `40 s`, `6 min`. */
function roughDuration(ms: number): string {
  return ms < 60_000 ? `${Math.max(0, Math.round(ms / 1000))} s` : `${Math.round(ms / 60_000)} min`;
}

/**
 * The previous node's result in one line (`talos-cp-1 done in 6 min: v1.13.9, Ready, etcd 3/3, gate passed`),
 * or that this is the first node of the rollout.
 */
export function previousNodeResult(op: Operation, step: Step, presentation: Presentation): string {
  const before = op.steps.slice(
    0,
    Math.max(
      0,
      op.steps.findIndex((s) => s.id === step.id),
    ),
  );
  const prev = before.findLast((s) => s.node !== undefined && (s.status === 'done' || s.status === 'skipped'));
  if (prev === undefined) return 'First node of the rollout.';
  const took =
    prev.startedAt !== undefined && prev.endedAt !== undefined
      ? ` in ${roughDuration(Date.parse(prev.endedAt) - Date.parse(prev.startedAt))}`
      : '';
  const result = presentation.approval?.result?.(prev) ?? prev.detail ?? '';
  return `${prev.nodeName ?? prev.node} ${prev.status}${took}${result ? `: ${truncate(result, 200)}` : ''}`;
}

/**
 * The short name of an installer image: its platform, the schematic's first characters and the
 * version, e.g. `metal · 376567988ad3 · v1.13.9` for `factory.talos.dev/metal-installer/376567…:v1.13.9`.
 */
export function shortImage(image: string | undefined): string {
  if (image === undefined) return 'image unknown';
  const m = /^(?:[^/]+\/)?(?:([a-z0-9-]+?)-)?installer(?:-secureboot)?\/([0-9a-f]{12,})(?::([^@]+))?/.exec(image);
  if (m === null) return image.split('/').at(-1) ?? image;
  return `${m[1] ?? 'installer'} · ${m[2]!.slice(0, 12)} · ${m[3] ?? '?'}`;
}

/**
 * What Cancel does, in its confirm dialog: which step it ends the operation before, and that nothing more is
 * touched. Cancel is the one verb that ends an operation now; "Stop after this node" ends it after a step.
 */
function stopConfirm(op: Operation, step: Step, presentation: Presentation): NonNullable<ButtonSpec['confirm']> {
  const what = step.nodeName ?? step.node;
  return {
    title: 'Cancel the operation?',
    text: escapeMrkdwn(
      `Cancels the ${presentation.name} of ${op.cluster} now${what ? `, before ${what}` : ''}: this step does not run, the operation ends and frees the cluster. Steps already done stay as they are. You may give a reason.`,
    ),
    confirm: 'Cancel',
    deny: 'Keep waiting',
  };
}

/**
 * The decision's buttons; the block carries the operation and the request's nonce. Approve asks
 * once more in a dialog that names the node, so a click on the wrong request in a busy channel
 * touches nothing; Stop asks too, and says what it stops.
 */
function decisionButtons(
  op: Operation,
  approval: Approval,
  step: Step,
  presentation: Presentation,
  approve: DecisionButton,
  stop: { text: string; actionId: string },
) {
  const value = buttonValue(op.id, approval.nonce);
  const kind = approve.actionId === ACTION.apply ? 'apply' : 'approve';
  return actions(`${kind}-${op.id}-${approval.nonce}`, [
    { text: approve.text, actionId: approve.actionId, value, style: 'primary', confirm: approve.confirm },
    { text: stop.text, actionId: stop.actionId, value, style: 'danger', confirm: stopConfirm(op, step, presentation) },
  ]);
}

/** The confirm dialog's title: the node by name (plain text, so no date or mention in it). */
function confirmTitle(step: Step): string {
  return `Approve ${step.nodeName ?? step.node ?? 'this node'}?`;
}

/** The deciding button of a request, with its dialog. */
type DecisionButton = { text: string; actionId: string; confirm: NonNullable<ButtonSpec['confirm']> };

/** Approve, with the dialog that names what the click does. */
function approveButton(step: Step, effect: string): DecisionButton {
  return {
    text: 'Approve',
    actionId: ACTION.approve,
    confirm: { title: confirmTitle(step), text: escapeMrkdwn(effect), confirm: 'Approve', deny: 'Not yet' },
  };
}

/** The line under the buttons: when the request expires (from when it was asked), and what it installs. */
function footer(approval: Approval, ...facts: string[]): Block {
  const expiry = expiryWords(approval.expiresAt, approval.requestedAt);
  return context([`${expiry[0]!.toUpperCase()}${expiry.slice(1)}`, ...facts].join(' · '));
}

/** Where the request stands, first under its question: `*production* · node 1 of 3 · v1.12.10 → v1.12.11 · asked by alice, started by bob`. */
function whereLine(op: Operation, step: Step, version: string, people: ApprovalContext['people']): Block {
  const from = step.fromVersion ?? op.target.fromVersion ?? '?';
  const who =
    people === undefined
      ? []
      : [
          people.started === undefined || people.started === people.asked
            ? `asked and started by ${people.asked}`
            : `asked by ${people.asked}, started by ${people.started}`,
        ];
  return section([`*${escapeMrkdwn(op.cluster)}*`, nodePosition(op, step), `${from} → ${version}`, ...who.map(escapeMrkdwn)].join(' · '));
}

/**
 * The question before each control plane, for a phone: the question, the previous node's result,
 * etcd in words, the buttons, and under them the expiry and the short image name. The full etcd
 * table goes to the thread in its own reply, before the card.
 */
export function approvalRequestMessage(
  op: Operation,
  approval: Approval,
  ctx: ApprovalContext,
  presentation: Presentation,
): ApprovalRequest {
  const { step } = ctx;
  const role = step.kind === 'upgrade-control-plane' ? 'control plane' : 'worker';
  const host = step.host ? ` on host ${step.host}` : '';
  const name = step.nodeName ?? step.node ?? '?';
  return {
    text: approvalNotification(op, step, approval, presentation),
    blocks: [
      section(`*${escapeMrkdwn(approvalQuestion(op, step, presentation))}*`),
      whereLine(op, step, ctx.version, ctx.people),
      section(`*Previous node:* ${escapeMrkdwn(previousNodeResult(op, step, presentation))}`),
      section(
        `*etcd:* ${escapeMrkdwn(ctx.etcdWords)}${ctx.whileDown === undefined ? '' : `\n*While it reboots:* ${escapeMrkdwn(ctx.whileDown)}`}`,
      ),
      ...((ctx.effects ?? []).length > 0 ? [section(`*Drain:* ${escapeMrkdwn(truncate((ctx.effects ?? []).join(' '), 600))}`)] : []),
      decisionButtons(
        op,
        approval,
        step,
        presentation,
        approveButton(
          step,
          `talosctl upgrade of ${role} ${nodeRef(step)}${host} to ${ctx.version}: the node reboots into the new image; etcd must keep quorum.`,
        ),
        { text: 'Cancel', actionId: ACTION.stop },
      ),
      footer(approval, `\`${escapeMrkdwn(shortImage(step.image))}\``),
    ],
    evidence: etcdEvidence(name, ctx.etcdEvidence, approval.requestedAt),
  };
}

/** What a node's approval request shows: etcd now, what happens, and the effect the confirm dialog names. */
export interface NodeApprovalFacts {
  summary: string;
  evidence: string[];
  warning: string;
}

/** The question before a rollback or a removal: what happens, how etcd looks now, the buttons, then what the node runs. */
export function nodeApprovalMessage(
  op: Operation,
  approval: Approval,
  step: Step,
  facts: NodeApprovalFacts,
  presentation: Presentation,
): ApprovalRequest {
  const effect = presentation.approval?.effect?.(step) ?? approvalSubject(op, step, presentation);
  const name = step.nodeName ?? step.node ?? '?';
  return {
    text: approvalNotification(op, step, approval, presentation),
    blocks: [
      section(`*${escapeMrkdwn(approvalQuestion(op, step, presentation))}*`),
      section(`*What happens:* ${escapeMrkdwn(facts.warning)}`),
      section(`*etcd:* ${escapeMrkdwn(facts.summary)}`),
      decisionButtons(op, approval, step, presentation, approveButton(step, effect), { text: 'Cancel', actionId: ACTION.stop }),
      footer(
        approval,
        `${escapeMrkdwn(nodeRef(step))} on host ${escapeMrkdwn(step.host ?? 'unknown')}`,
        `runs ${step.fromVersion ?? op.target.fromVersion ?? '?'}`,
      ),
    ],
    ...(facts.evidence.length > 0
      ? {
          evidence: etcdEvidence(name, facts.evidence, approval.requestedAt),
        }
      : {}),
  };
}

/** The question before the real upgrade-k8s run: an approver applies what the dry run showed. */
export function applyRequestMessage(
  op: Operation,
  approval: Approval,
  step: Step,
  dryRun: string | undefined,
  presentation: Presentation,
): ApprovalRequest {
  const v = op.target.version ?? '?';
  return {
    text: approvalNotification(op, step, approval, presentation),
    blocks: [
      section(`*${escapeMrkdwn(approvalQuestion(op, step, presentation))}*`),
      section(
        `\`talosctl upgrade-k8s --to ${v}\` through ${escapeMrkdwn(step.node ?? 'a healthy control plane')} upgrades the whole cluster.`,
      ),
      section(`*Dry run:* ${escapeMrkdwn(dryRun ?? 'see above')}`),
      decisionButtons(
        op,
        approval,
        step,
        presentation,
        {
          text: 'Apply',
          actionId: ACTION.apply,
          confirm: {
            title: 'Upgrade Kubernetes?',
            text: `talosctl upgrade-k8s --to ${v}: every control-plane component and kubelet of ${op.cluster}.`,
            confirm: 'Apply',
            deny: 'Not yet',
          },
        },
        { text: 'Cancel', actionId: ACTION.cancelApply },
      ),
      footer(
        approval,
        `${op.target.fromVersion ?? '?'} → ${v} (Terraform: \`v${v}\`)`,
        `snapshot ${op.snapshot ? `\`${op.snapshot.id}\`` : 'none'}`,
      ),
    ],
  };
}

/** The approval buttons of a request a playbook builds itself (a Terraform apply asked again): Approve and a confirmed Stop. */
export function approveOrStopButtons(
  op: Operation,
  approval: Approval,
  step: Step,
  presentation: Presentation,
  confirm: NonNullable<ButtonSpec['confirm']>,
): Block {
  return decisionButtons(
    op,
    approval,
    step,
    presentation,
    { text: 'Approve', actionId: ACTION.approve, confirm },
    { text: 'Cancel', actionId: ACTION.stop },
  );
}

/**
 * The scope of an approval on its card: one approval covers every step left of its kind that starts within
 * `minutes` of it, and a failure, a Retry or a closed window asks again. Placed just before the buttons, so
 * nothing but the expiry sits below them.
 */
export function withScope(request: ApprovalRequest, covers: string, minutes: number): ApprovalRequest {
  const blocks = request.blocks ?? [];
  const at = blocks.findIndex((b) => b['type'] === 'actions');
  const note = context(
    `This approval covers ${escapeMrkdwn(covers)} that start within ${minutes} min of it; a failure, a Retry or a closed window asks again.`,
  );
  return { ...request, blocks: at < 0 ? [...blocks, note] : [...blocks.slice(0, at), note, ...blocks.slice(at)] };
}

/**
 * What a request showed under its question, kept on the approval so the decided request still
 * shows the evidence the approver saw: every block but the first (the question) and the buttons.
 */
export function shownEvidence(request: ChatMessage): Block[] {
  return (request.blocks ?? []).slice(1).filter((b) => b['type'] !== 'actions' && b['block_id'] !== WHILE_WAITING);
}

/**
 * The block id of a request's line that holds only while it waits ("Nothing was applied yet."): the
 * decided request leaves it out, since once approved it would no longer be true.
 */
export const WHILE_WAITING = 'while-waiting';

/**
 * The request with its approvers mentioned once, under the question, so Slack notifies them: user
 * ids as `<@U…>`, user groups as `<!subteam^S…>`. The notification's text stays the question with its
 * cluster and place; a reminder mentions them again.
 */
export function withApprovers<T extends ChatMessage>(request: T, approvers: readonly string[], taken?: boolean): T {
  if (approvers.length === 0) return request;
  const mentions = approvers.map(mention).join(' ');
  const [first, ...rest] = request.blocks ?? [section(request.text)];
  const note = taken === true ? ", who took this operation's approvals; every approver is paged again if it nears its expiry" : '';
  return { ...request, blocks: [...(first ? [first] : []), context(`For ${mentions}${note}`), ...rest] };
}

/**
 * The request with [Take it] beside its decision: an approver takes the operation's later requests, which then
 * page only them. Offered where later requests will follow (`later` of them).
 */
export function withTakeButton<T extends ChatMessage>(request: T, op: Operation, approval: Approval, later: number): T {
  if (later < 1) return request;
  const blocks = (request.blocks ?? []).map((b) => {
    if (b['type'] !== 'actions') return b;
    const [take] = actions('take', [
      {
        text: 'Take it',
        actionId: ACTION.take,
        value: buttonValue(op.id, approval.nonce),
        confirm: {
          title: 'Take the approvals?',
          text: `The ${later === 1 ? 'next request' : `${later} later requests`} of ${escapeMrkdwn(op.cluster)} page only you; every approver is paged again when a request nears its expiry. This request still needs your Approve.`,
          confirm: 'Take it',
          deny: 'Not now',
        },
      },
    ])['elements'] as unknown[];
    return { ...b, elements: [...((b['elements'] as unknown[] | undefined) ?? []), take] };
  });
  return { ...request, blocks };
}

/** An unanswered request shortly before it expires: the approvers are called again, in the channel. */
export function approvalReminderMessage(
  op: Operation,
  approval: Approval,
  step: Step,
  approvers: readonly string[],
  link: string | undefined,
  presentation: Presentation,
  now: Date,
): ChatMessage {
  const mentions = approvers.map(mention).join(' ');
  const request = link ? `<${link}|The request>` : 'The request in this thread';
  const taken = op.approvalsTaken === undefined ? '' : ` ${mentionUser(op.approvalsTaken.by)} took the approvals and has not answered.`;
  const text = `⏰ ${escapeMrkdwn(approvalQuestion(op, step, presentation))} ${request} ${expiryWords(approval.expiresAt, now)}; then \`${op.id}\` pauses and touches nothing.${taken} ${mentions}`;
  return { text, blocks: [section(text)] };
}

/** `approval 1 of 2: <@carol> approved`: where a request that needs several approvers stands. */
function givenLine(given: readonly { by: string }[], needed: number): string {
  return `approval ${given.length} of ${needed}: ${given.map((g) => mentionUser(g.by)).join(' and ')} approved`;
}

/**
 * A request one of several approvers approved, as its card now reads: the question, who approved and
 * that another approver is needed (mentioning those who may), the evidence it showed, and its buttons.
 */
export function approvalPartialMessage(
  op: Operation,
  approval: Approval,
  step: Step,
  presentation: Presentation,
  paged: readonly string[],
): ChatMessage {
  const given = approval.given ?? [];
  const needed = approval.needed ?? given.length + 1;
  const waiting = needed - given.length === 1 ? 'waiting for a second approver' : `waiting for ${needed - given.length} more approvers`;
  const line = `${givenLine(given, needed)}; ${waiting}${paged.length > 0 ? ` (${paged.map(mention).join(' ')})` : ''}.`;
  const shown = approval.shown ?? [];
  const footerBlock = shown.at(-1)?.['type'] === 'context' ? shown.at(-1) : undefined;
  const evidence = footerBlock === undefined ? shown : shown.slice(0, -1);
  const effect = presentation.approval?.effect?.(step) ?? approvalSubject(op, step, presentation);
  return {
    text: `${approvalNotification(op, step, approval, presentation)} ${givenLine(given, needed)}; ${waiting}`,
    blocks: [
      section(`*${escapeMrkdwn(approvalQuestion(op, step, presentation))}*`),
      section(`*${line}*`),
      ...evidence,
      decisionButtons(op, approval, step, presentation, approveButton(step, effect), { text: 'Cancel', actionId: ACTION.stop }),
      ...(footerBlock === undefined ? [] : [footerBlock]),
    ],
  };
}

/** The thread's reply when one of several approvers approved: it pages those who may still approve. */
export function approvalsPage(
  op: Operation,
  approval: Approval,
  step: Step | undefined,
  given: readonly { by: string }[],
  needed: number,
  paged: readonly string[],
  presentation: Presentation,
): ChatMessage {
  const subject = step === undefined ? approval.step : approvalSubject(op, step, presentation);
  const who = paged.length > 0 ? `${paged.map(mention).join(' ')}: ` : '';
  const text = `🔐 ${escapeMrkdwn(subject)} (${op.cluster}): ${givenLine(given, needed)}. ${who}a ${needed - given.length === 1 ? 'second' : 'further'} approver is needed before it runs; nothing has been touched yet.`;
  return { text, blocks: [section(text)] };
}

/** A request once decided: who decided and when, above the evidence it showed (node, image, etcd, expiry). */
export function approvalDecidedMessage(op: Operation, approval: Approval, step: Step, presentation: Presentation): ChatMessage {
  const verb = approval.state === 'approved' ? '✅ Approved' : approval.state === 'stopped' ? '🛑 Stopped' : '⏱ Expired';
  const several = approval.state === 'approved' && (approval.given?.length ?? 0) > 1 ? approval.given! : undefined;
  const who =
    several !== undefined
      ? ` by ${several.map((g) => mentionUser(g.by)).join(' and ')}`
      : approval.by
        ? ` by ${mentionUser(approval.by)}`
        : '';
  const when = approval.at ? ` at ${formatTime(approval.at)}` : '';
  const why = approval.reason === undefined ? '' : ` Reason: ${escapeMrkdwn(approval.reason)}`;
  const text = `${verb}${who}${when}: ${escapeMrkdwn(approvalSubject(op, step, presentation))} (${op.id})${why}`;
  const blocks = [section(text), ...(approval.shown ?? [])];
  if (approval.state === 'expired') {
    blocks.push(
      context('The operation is paused. Nothing was touched. An approver can ask for approval again:'),
      actions(`rerequest-${op.id}-${approval.nonce}`, [
        { text: 'Request approval again', actionId: ACTION.rerequest, value: buttonValue(op.id, approval.nonce) },
      ]),
    );
  }
  return { text, blocks };
}
