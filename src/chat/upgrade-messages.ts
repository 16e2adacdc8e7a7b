import type { Approval, Operation, Step } from '../ops/operation.ts';
import type { ChatMessage } from './chat-port.ts';
import { actions, context, escapeMrkdwn, fields, formatTime, header, mentionUser, preformatted, section } from './blocks.ts';

export const ACTION = {
  start: 'talos-op-start',
  cancelPlan: 'talos-op-cancel',
  approve: 'talos-step-approve',
  stop: 'talos-step-stop',
  rollback: 'talos-node-rollback',
  rerequest: 'talos-step-rerequest',
} as const;

/** The runbook's review items the starter confirms; the bot cannot check them itself. */
export const REVIEW_ITEMS = [
  'Talos release notes reviewed',
  'support matrix checked (Talos ⇄ Kubernetes)',
  'Cilium compatibility checked',
  'system-extension compatibility checked',
  'the exact target tested in staging',
];

export function buttonValue(opId: string, nonce: string): string {
  return `${opId}.${nonce}`;
}

const STEP_ICON: Record<Step['status'], string> = { pending: '▫️', running: '⏳', done: '✅', skipped: '⏭️', failed: '❌' };

export function stepLabel(step: Step): string {
  if (step.kind === 'snapshot') return 'etcd snapshot, copied off-cluster';
  if (step.kind === 'verify') return 'verify every node runs the target, final health gate';
  const role = step.kind === 'upgrade-control-plane' ? 'control plane' : 'worker';
  const name = step.nodeName ? `${step.nodeName} ` : '';
  const host = step.host ? `, host ${step.host}` : '';
  return `${role} ${name}(${step.node ?? '?'}${host})`;
}

function stepLine(step: Step, op: Operation, index: number): string {
  const approval = op.approvals.filter((a) => a.step === step.id).at(-1);
  const waiting = approval?.state === 'pending' ? ' — awaiting approval' : '';
  const detail = step.detail ? ` — ${escapeMrkdwn(step.detail)}` : '';
  const gate = step.kind === 'upgrade-control-plane' ? ' · approval · etcd quorum before and after · health gate' : step.kind === 'upgrade-worker' ? ' · health gate' : '';
  return `${STEP_ICON[step.status]} ${index + 1}. ${escapeMrkdwn(stepLabel(step))}${op.state === 'planned' ? gate : ''}${waiting}${detail}`;
}

const STATE_TEXT: Record<Operation['state'], string> = {
  preflight: '⏳ preflight running',
  refused: '⛔ refused',
  planned: '📝 planned — waiting for an operator to start',
  running: '⏳ running',
  'awaiting-approval': '⏸ waiting for approval',
  paused: '⏸ paused (approval expired)',
  failed: '❌ stopped at the first failure',
  completed: '✅ completed',
  cancelled: '🚫 cancelled',
};

/** The operation's root message: the plan, and, once running, its progress edited in place. */
export function operationRootMessage(op: Operation): ChatMessage {
  const from = op.target.fromVersion ?? '?';
  const title = `Talos upgrade ${from} → ${op.target.version ?? '?'}: ${op.cluster}`;
  const blocks = [
    header(title),
    fields([
      ['Operation', `\`${op.id}\``],
      ['State', STATE_TEXT[op.state]],
      ['Requested by', mentionUser(op.requestedBy)],
      ['Started by', op.startedBy ? `${mentionUser(op.startedBy)} at ${formatTime(op.startedAt ?? op.createdAt)}` : '—'],
    ]),
  ];
  if (op.state === 'refused') {
    blocks.push(section(`*Refused before touching anything:*\n${op.refusals.map((r) => `• ${escapeMrkdwn(r)}`).join('\n')}`));
  } else {
    blocks.push(section(`*Steps* (workers first, then control planes, one node at a time):\n${op.steps.map((s, i) => stepLine(s, op, i)).join('\n')}`));
    const image = op.steps.find((s) => s.image)?.image;
    if (image) blocks.push(context(`Installer image: \`${image}\`${op.snapshot ? ` · snapshot \`${op.snapshot.id}\`` : ''}`));
  }
  if (op.state === 'planned' && op.planNonce) {
    blocks.push(
      section(
        '*Gates:* health gate before starting and after every node; etcd quorum and a single leader before and after each control plane; Longhorn volumes healthy before the next node.\n' +
          `*Confirm before starting (runbook):*\n${REVIEW_ITEMS.map((r) => `☐ ${r}`).join('\n')}`,
      ),
      actions(`plan-${op.id}-${op.planNonce}`, [
        {
          text: 'Start',
          actionId: ACTION.start,
          value: buttonValue(op.id, op.planNonce),
          style: 'primary',
          confirm: {
            title: 'Start the upgrade?',
            text: `By starting you confirm: ${REVIEW_ITEMS.join('; ')}.`,
            confirm: 'Start',
            deny: 'Not yet',
          },
        },
        { text: 'Cancel', actionId: ACTION.cancelPlan, value: buttonValue(op.id, op.planNonce) },
      ]),
    );
  }
  if (op.reason && (op.state === 'failed' || op.state === 'cancelled')) blocks.push(section(`*Reason:* ${escapeMrkdwn(op.reason)}`));
  const text = `${title} — ${STATE_TEXT[op.state]} (${op.id})`;
  return { text, blocks };
}

export interface ApprovalContext {
  step: Step;
  version: string;
  etcdSummary: string;
  etcdEvidence: string[];
}

/** The question before each control plane: which node, which host, which image, and how etcd looks now. */
export function approvalRequestMessage(op: Operation, approval: Approval, ctx: ApprovalContext): ChatMessage {
  const { step } = ctx;
  const text = `🔐 Approval needed: upgrade ${stepLabel(step)} to ${ctx.version} (${op.id})`;
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(text)}*`),
      fields([
        ['Node', `${step.nodeName ?? '?'} (${step.node ?? '?'})`],
        ['Host', step.host ?? 'unknown'],
        ['Image', `\`${step.image ?? '?'}\``],
        ['Expires', formatTime(approval.expiresAt)],
      ]),
      section(`*etcd now:* ${escapeMrkdwn(ctx.etcdSummary)}`),
      preformatted(ctx.etcdEvidence),
      actions(`approve-${op.id}-${approval.nonce}`, [
        { text: 'Approve', actionId: ACTION.approve, value: buttonValue(op.id, approval.nonce), style: 'primary' },
        { text: 'Stop', actionId: ACTION.stop, value: buttonValue(op.id, approval.nonce), style: 'danger' },
      ]),
    ],
  };
}

export function approvalDecidedMessage(op: Operation, approval: Approval, step: Step): ChatMessage {
  const verb = approval.state === 'approved' ? '✅ Approved' : approval.state === 'stopped' ? '🛑 Stopped' : '⏱ Expired';
  const who = approval.by ? ` by ${mentionUser(approval.by)}` : '';
  const when = approval.at ? ` at ${formatTime(approval.at)}` : '';
  const text = `${verb}${who}${when}: upgrade ${stepLabel(step)} (${op.id})`;
  const blocks = [section(text)];
  if (approval.state === 'expired') {
    blocks.push(
      context('The operation is paused. Nothing was touched. An approver can ask for approval again:'),
      actions(`rerequest-${op.id}-${approval.nonce}`, [{ text: 'Request approval again', actionId: ACTION.rerequest, value: buttonValue(op.id, approval.nonce) }]),
    );
  }
  return { text, blocks };
}

export function failureMessage(op: Operation, step: Step | undefined, reason: string, evidence: string[]): ChatMessage {
  const where = step ? ` at ${stepLabel(step)}` : '';
  const text = `❌ Stopped${where}: ${reason}. No further node was touched; the cluster stays locked to ${op.id} until an operator cancels it.`;
  const blocks = [section(escapeMrkdwn(text))];
  if (evidence.length > 0) blocks.push(preformatted(evidence));
  if (op.failure && op.failure.rollback === 'offered' && step?.node) {
    blocks.push(
      actions(`rollback-${op.id}-${op.failure.nonce}`, [
        {
          text: `Roll back ${step.node}`,
          actionId: ACTION.rollback,
          value: buttonValue(op.id, op.failure.nonce),
          style: 'danger',
          confirm: { title: 'Roll back this node?', text: `talosctl rollback --nodes ${step.node}, then wait for it and verify its version.`, confirm: 'Roll back', deny: 'Keep' },
        },
      ]),
    );
  }
  blocks.push(context(`\`/talos cancel ${op.id}\` releases the cluster once the incident is handled.`));
  return { text, blocks };
}

export function terraformFollowUp(op: Operation, schematic: string, platform: string): ChatMessage {
  const v = op.target.version ?? '?';
  const iso = `https://factory.talos.dev/image/${schematic}/${v}/${platform}-amd64.iso`;
  const lines = [
    `*Terraform follow-up* (runbook, after every node runs ${v}):`,
    `1. Set \`talos_version = "${v}"\` in the ${op.cluster} inventory.`,
    `2. Download the matching ISO and verify its checksum: ${iso}`,
    `3. Upload it to the static Proxmox file ID every node declares (\`isos:iso/talos-${platform}-amd64.iso\`) and confirm the artifact there matches.`,
    '4. Run `tofu plan`: if it replaces `talos_machine_secrets` or any VM, do not continue. Apply only now that every node runs the declared version.',
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}
