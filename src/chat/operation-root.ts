import type { Operation, Step } from '../ops/operation.ts';
import type { ChatMessage } from '../port/chat-port.ts';
import { rehearsalBlocks } from './rehearsal-message.ts';
import { actions, context, escapeMrkdwn, fields, formatTime, header, mentionUser, preformatted, section } from './blocks.ts';
import type { Block } from '../port/chat-port.ts';
import { ACTION, buttonValue, PLAN_AGAIN_NONCE } from './buttons.ts';
import { escapeMrkdwnKeepingLinks } from './operation-link.ts';

/** The runbook's review items the starter confirms; the bot cannot check them itself. */
export const REVIEW_ITEMS = [
  'Talos release notes reviewed',
  'support matrix checked (Talos ⇄ Kubernetes)',
  'Cilium compatibility checked',
  'system-extension compatibility checked',
  'the exact target tested in staging',
];

/** The runbook's review items before a Kubernetes upgrade; the dry run shows deprecated APIs, the rest is for people. */
export const K8S_REVIEW_ITEMS = ['removed and deprecated APIs reviewed (the dry run also lists what it finds)', 'the exact target tested in staging'];

/** What the starter of an operation of this kind confirms with Start. */
export function reviewItems(kind: Operation['kind']): string[] {
  if (kind === 'talos-upgrade') return REVIEW_ITEMS;
  if (kind === 'k8s-upgrade') return K8S_REVIEW_ITEMS;
  return [];
}

const STEP_ICON: Record<Step['status'], string> = { pending: '▫️', running: '⏳', done: '✅', skipped: '⏭️', failed: '❌' };

function nodeRef(step: Step): string {
  const host = step.host ? `, host ${step.host}` : '';
  return `${step.nodeName ? `${step.nodeName} ` : ''}(${step.node ?? '?'}${host})`;
}

const FIXED_LABELS: Partial<Record<Step['kind'], string>> = {
  snapshot: 'etcd snapshot, copied off-cluster',
  verify: 'verify every node runs the target, final health gate',
  'k8s-verify': 'verify every node reports the target kubelet version, final health gate',
  'rollback-verify': 'wait for the node to come back Ready, verify the version it reports',
  'removal-verify': 'health gate of the cluster without the removed node',
  'tofu-apply': '`tofu apply` of exactly the reviewed plan file',
  'apply-gate': 'health gate after the apply, new nodes included',
};

export function stepLabel(step: Step): string {
  const fixed = FIXED_LABELS[step.kind];
  if (fixed !== undefined) return fixed;
  const cp = step.node ?? 'a healthy control plane';
  if (step.kind === 'k8s-dry-run') return `dry run: talosctl upgrade-k8s --dry-run on ${cp}`;
  if (step.kind === 'k8s-apply') return `upgrade: talosctl upgrade-k8s on ${cp}`;
  if (step.kind === 'rollback-node') return `talosctl rollback of ${nodeRef(step)}`;
  if (step.kind === 'reset-node') return `talosctl reset of ${nodeRef(step)}: drain, leave etcd, power off`;
  if (step.kind === 'delete-node') return `delete the Kubernetes Node ${step.nodeName ?? step.node ?? '?'}`;
  if (step.kind === 'node-join') return `watch ${step.nodeName ?? '?'} join: Node Ready; a control plane a voting etcd member under one leader`;
  const role = step.kind === 'upgrade-control-plane' ? 'control plane' : 'worker';
  const name = step.nodeName ? `${step.nodeName} ` : '';
  const host = step.host ? `, host ${step.host}` : '';
  return `${role} ${name}(${step.node ?? '?'}${host})`;
}

const PLANNED_GATES: Partial<Record<Step['kind'], string>> = {
  'upgrade-control-plane': ' · approval · etcd quorum before and after · health gate',
  'upgrade-worker': ' · health gate',
  'k8s-apply': " · an approver's Apply",
  'rollback-node': ' · approval',
  'reset-node': ' · approval',
};

function stepLine(step: Step, op: Operation, index: number): string {
  const approval = op.approvals.filter((a) => a.step === step.id).at(-1);
  const waiting = approval?.state === 'pending' ? ' — awaiting approval' : '';
  const detail = step.detail ? ` — ${escapeMrkdwn(step.detail)}` : '';
  const gate = PLANNED_GATES[step.kind] ?? '';
  return `${STEP_ICON[step.status]} ${index + 1}. ${escapeMrkdwn(stepLabel(step))}${op.state === 'planned' ? gate : ''}${waiting}${detail}`;
}

const STATE_TEXT: Record<Operation['state'], string> = {
  preflight: '⏳ preflight running',
  refused: '⛔ refused',
  planned: '📝 planned — waiting for an operator to start',
  running: '⏳ running',
  'awaiting-approval': '⏸ waiting for approval',
  'waiting-window': '⏸ waiting for the maintenance window',
  paused: '⏸ paused (approval expired)',
  failed: '❌ stopped at the first failure',
  completed: '✅ completed',
  cancelled: '🚫 cancelled',
};

/** What differs between the root messages of the operation kinds. */
interface KindText {
  /** Who clicks Start (labelled `startLabel`): operators, or for a Terraform change an approver. */
  startLabel?: string;
  /** The state of a plan that waits for its Start, when it is not an operator's. */
  plannedText?: string;
  /** Blocks after the title's fields: what a reviewer needs before the steps. */
  details?(op: Operation): Block[];
  title(op: Operation): string;
  /** How the steps run, shown after "Steps". */
  order: string;
  /** The gates listed under a plan that waits for Start. */
  gates: string;
  startTitle: string;
  /** A context line under the steps. */
  context(op: Operation): string | undefined;
}

function nodeTitle(op: Operation): string {
  return `${op.target.node ?? '?'}${op.target.nodeName ? ` (${op.target.nodeName})` : ''}`;
}

const snapshotNote = (op: Operation): string => (op.snapshot ? ` · snapshot \`${op.snapshot.id}\`` : '');

const KIND_TEXT: Record<Operation['kind'], KindText> = {
  'talos-upgrade': {
    title: (op) => `Talos upgrade ${op.target.fromVersion ?? '?'} → ${op.target.version ?? '?'}: ${op.cluster}`,
    order: 'workers first, then control planes, one node at a time',
    gates:
      'health gate before starting and after every node; etcd quorum and a single leader before and after each control plane; Longhorn volumes healthy before the next node.',
    startTitle: 'Start the upgrade?',
    context: (op) => {
      const image = op.steps.find((s) => s.image)?.image;
      return image ? `Installer image: \`${image}\`${snapshotNote(op)}` : undefined;
    },
  },
  'k8s-upgrade': {
    title: (op) => `Kubernetes upgrade ${op.target.fromVersion ?? '?'} → ${op.target.version ?? '?'}: ${op.cluster}`,
    order: "snapshot, dry run, an approver's Apply, then the whole cluster at once",
    gates:
      'health gate before the snapshot and after the upgrade; the dry run on one healthy control plane is posted here before an approver applies; every node must then report the target kubelet version.',
    startTitle: 'Start the Kubernetes upgrade?',
    context: (op) => {
      const v = op.target.version ?? '?';
      const talos = op.target.talosVersion ? ` · Talos ${op.target.talosVersion}` : '';
      return `Version: the CLI takes \`${v}\` (\`talosctl upgrade-k8s --to ${v}\`, no leading v); Terraform's \`talos_kubernetes_version\` takes \`v${v}\` (leading v)${talos}${snapshotNote(op)}`;
    },
  },
  'node-rollback': {
    title: (op) => `Rollback of ${nodeTitle(op)}: ${op.cluster}`,
    order: 'after an approver approves',
    gates: '',
    startTitle: 'Roll back?',
    context: (op) =>
      `Ran ${op.target.fromVersion ?? '?'} before the rollback. Do not move the Terraform \`talos_version\` declaration until the incident is resolved; if you already changed it, revert that change before the next apply.`,
  },
  'node-remove': {
    title: (op) => `Removal of ${nodeTitle(op)}: ${op.cluster}`,
    order: 'after an approver approves',
    gates: '',
    startTitle: 'Remove?',
    context: () => 'Terraform still has the node: remove its inventory entry and apply Terraform only after this operation completes.',
  },
  'terraform-apply': {
    title: (op) => `Terraform change: ${op.cluster}${op.terraform ? ` (${op.terraform.summary})` : ''}`,
    order: "after an approver's Apply: snapshot, `tofu apply` of exactly this plan, new nodes watched until they join, the health gate",
    gates: 'the apply runs the saved plan file only (never a fresh plan); production needs the same commit applied to staging with its gate passed; new control planes must become voting etcd members under one leader.',
    startTitle: 'Apply this plan?',
    startLabel: 'Apply',
    plannedText: "📝 planned — waiting for an approver's Apply",
    details: terraformDetails,
    context: (op) => (op.snapshot ? `Snapshot \`${op.snapshot.id}\`` : undefined),
  },
  snapshot: {
    title: (op) => `etcd snapshot: ${op.cluster}`,
    order: 'one step',
    gates: '',
    startTitle: 'Start?',
    context: (op) => (op.snapshot ? `Snapshot \`${op.snapshot.id}\`` : undefined),
  },
};

/** A Terraform change that was refused, stopped or expired offers a fresh plan, once. */
export function planAgainBlocks(op: Operation): Block[] {
  if (op.kind !== 'terraform-apply' || !['refused', 'failed', 'cancelled'].includes(op.state)) return [];
  if (op.replannedAs !== undefined) return [context(`Planned again as \`${op.replannedAs}\`.`)];
  return [actions(`replan-${op.id}-${PLAN_AGAIN_NONCE}`, [{ text: 'Plan again', actionId: ACTION.planAgain, value: buttonValue(op.id, PLAN_AGAIN_NONCE) }])];
}

function stateText(op: Operation): string {
  return op.state === 'planned' ? (KIND_TEXT[op.kind].plannedText ?? STATE_TEXT.planned) : STATE_TEXT[op.state];
}

/** Changes listed in the plan message; the full plan is attached in the thread. */
const LISTED_CHANGES = 30;

/** A Terraform change's plan: the commit and the plan's hash, then every change, as the reviewer inspects it. */
function terraformDetails(op: Operation): Block[] {
  const tf = op.terraform;
  if (tf === undefined) return [];
  const commit = tf.commit ? `\`${tf.commit.slice(0, 12)}\`${tf.dirty ? ' with uncommitted changes' : ''}` : 'not a git checkout';
  const blocks: Block[] = [fields([['Terraform commit', commit], ['Plan', `${escapeMrkdwn(tf.summary)}${tf.planSha256 ? ` · sha256 \`${tf.planSha256.slice(0, 12)}…\`` : ''}`]])];
  const listed = tf.listing.slice(0, LISTED_CHANGES);
  if (tf.listing.length > LISTED_CHANGES) listed.push(`… and ${tf.listing.length - LISTED_CHANGES} more lines in the attached plan`);
  if (listed.length > 0) blocks.push(preformatted(listed));
  return blocks;
}

/** The operation's root message: the plan, and, once running, its progress edited in place. */
export function operationRootMessage(op: Operation): ChatMessage {
  const kind = KIND_TEXT[op.kind];
  const review = reviewItems(op.kind);
  const title = kind.title(op);
  const blocks = [
    header(title),
    fields([
      ['Operation', `\`${op.id}\``],
      ['State', stateText(op)],
      ['Requested by', mentionUser(op.requestedBy)],
      ['Started by', op.startedBy ? `${mentionUser(op.startedBy)} at ${formatTime(op.startedAt ?? op.createdAt)}` : '—'],
    ]),
    ...(kind.details?.(op) ?? []),
  ];
  if (op.state === 'refused') {
    // A refusal may name the operation that holds the cluster, by a link to its thread.
    blocks.push(section(`*Refused before touching anything:*\n${op.refusals.map((r) => `• ${escapeMrkdwnKeepingLinks(r)}`).join('\n')}`));
  } else {
    blocks.push(section(`*Steps* (${kind.order}):\n${op.steps.map((s, i) => stepLine(s, op, i)).join('\n')}`));
    const line = kind.context(op);
    if (line) blocks.push(context(line));
  }
  if (op.notes.length > 0) blocks.push(context(op.notes.map((n) => escapeMrkdwn(n)).join('\n')));
  // This message changes with the phase; steps report in the thread, so a step costs Slack one or two calls.
  if (op.state === 'running' || op.state === 'awaiting-approval') blocks.push(context(`Steps report in this thread as they end; \`/talos status\` shows the step in progress.`));
  blocks.push(...rehearsalBlocks(op));
  if (op.state === 'planned' && op.planNonce) {
    const confirm = review.length > 0 ? `*Confirm before starting (runbook):*\n${review.map((r) => `☐ ${r}`).join('\n')}` : '';
    blocks.push(
      section(`*Gates:* ${kind.gates}\n${confirm}`.trimEnd()),
      actions(`plan-${op.id}-${op.planNonce}`, [
        {
          text: kind.startLabel ?? 'Start',
          actionId: ACTION.start,
          value: buttonValue(op.id, op.planNonce),
          style: 'primary',
          confirm: {
            title: kind.startTitle,
            text: review.length > 0 ? `By starting you confirm: ${review.join('; ')}.` : `This applies the reviewed plan to ${op.cluster} exactly as shown.`,
            confirm: kind.startLabel ?? 'Start',
            deny: 'Not yet',
          },
        },
        { text: 'Cancel', actionId: ACTION.cancelPlan, value: buttonValue(op.id, op.planNonce) },
      ]),
    );
  }
  if (op.reason && (op.state === 'failed' || op.state === 'cancelled')) blocks.push(section(`*Reason:* ${escapeMrkdwn(op.reason)}`));
  blocks.push(...planAgainBlocks(op));
  const text = `${title} — ${stateText(op)} (${op.id})`;
  return { text, blocks };
}
