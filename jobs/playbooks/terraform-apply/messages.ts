import { declaredNodes, type ClusterConfig } from '../../../src/config/inventory.ts';
import { inventoryLinesFor, type JoinedNode } from '../../../src/config/inventory-lines.ts';
import { terraformData } from './data.ts';
import { isoBlocks } from './texts.ts';
import { startConfirmBlock } from '../../../src/chat/operation-root.ts';
import type { Approval, Operation, Step } from '../../../src/ops/operation.ts';
import { approvalNotification, approvalQuestion, approveOrStopButtons, WHILE_WAITING } from '../../../src/chat/approval-messages.ts';
import type { Presentation } from '../../../src/chat/presentation.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import {
  context,
  escapeMrkdwn,
  fields,
  formatDuration,
  formatTime,
  mention,
  mentionUser,
  preformatted,
  section,
} from '../../../src/chat/blocks.ts';
import { shortHashes } from '../../../src/chat/short-hashes.ts';

/** Lines of `tofu apply` output shown in the thread; the full log is attached. */
export const APPLY_TAIL_LINES = 15;

export interface ApplyProgress {
  cluster: string;
  outcome: 'running' | 'done' | 'failed';
  lines: string[];
  elapsedMs: number;
  /** `Apply complete! Resources: …`, once tofu printed it. */
  summary?: string;
}

/** The one thread message `tofu apply` reports in, edited as it goes: the newest lines, trimmed. */
export function applyProgressMessage(progress: ApplyProgress): ChatMessage {
  const head =
    progress.outcome === 'running'
      ? `⏳ *tofu apply* of the reviewed plan on ${escapeMrkdwn(progress.cluster)} is running (${formatDuration(progress.elapsedMs)})`
      : progress.outcome === 'done'
        ? `✅ *tofu apply* finished on ${escapeMrkdwn(progress.cluster)} in ${formatDuration(progress.elapsedMs)}${progress.summary ? `: ${escapeMrkdwn(progress.summary)}` : ''}`
        : `❌ *tofu apply* failed on ${escapeMrkdwn(progress.cluster)} after ${formatDuration(progress.elapsedMs)}; nothing is reverted automatically`;
  // Full hashes (schematic ids in the outputs) stay in the attached log.
  const tail = progress.lines.slice(-APPLY_TAIL_LINES).map(shortHashes);
  const trimmed =
    progress.lines.length > tail.length
      ? `Last ${tail.length} of ${progress.lines.length} lines; the full log is attached when it ends.`
      : undefined;
  const blocks = [section(head)];
  if (tail.length > 0) blocks.push(preformatted(tail));
  if (trimmed !== undefined) blocks.push(context(trimmed));
  return { text: head, blocks };
}

/** After a Terraform change: the promotion, and the inventory entries new nodes need. */
export function terraformFollowUpMessage(
  op: Operation,
  cluster: ClusterConfig,
  production: ClusterConfig[],
  joined: string[],
  nodes: readonly JoinedNode[] = [],
): ChatMessage {
  const lines = [
    `*Applied* commit \`${terraformData(op).terraform?.commit?.slice(0, 12) ?? '?'}\` to ${cluster.name}; the health gate passed.`,
  ];
  if (cluster.environment === 'staging' && production.length > 0) {
    lines.push(
      `Next (runbook): promote the same change to production in a maintenance window: run \`/talos plan\` in ${production.map((p) => `<#${p.channel}>`).join(', ')}. A plan of this commit there is marked as applied to staging, with this gate.`,
    );
  }
  // The bot finds new nodes itself; only node lists the inventory keeps as assertions need the new node.
  const declared = declaredNodes(cluster);
  const lists = declared.controlPlanes !== undefined || declared.workers !== undefined;
  for (const node of joined)
    lines.push(
      lists
        ? `${escapeMrkdwn(node)}. This bot's inventory lists the nodes of ${cluster.name}: add it to \`controlPlanes\` or \`workers\` there (or leave the node lists out), or every health gate names it as missing.`
        : `${escapeMrkdwn(node)}. Nothing to edit in this bot's inventory: the next operation includes it.`,
    );
  const yaml = inventoryLinesFor(cluster, nodes);
  if (yaml.length > 0)
    lines.push(`The lines for ${cluster.name} in the inventory (CLUSTERS_FILE), replacing its node lists; the bot reloads the file:`);
  const text = lines.join('\n');
  return {
    text: yaml.length > 0 ? `${text}\n${yaml.join('\n')}` : text,
    blocks: [section(text), ...(yaml.length > 0 ? [preformatted(yaml)] : [])],
  };
}

/**
 * The call to review a plan that may be applied, broadcast so the approvers it names are
 * notified: what it changes, where it stands on promotion, and until when Apply is offered.
 */
export function applyReviewRequest(op: Operation, approvers: readonly string[], expiresAt: string, fourEyes: boolean): ChatMessage {
  const mentions = approvers.map(mention).join(' ');
  const staging = op.rehearsal?.stagingOp !== undefined;
  const promotion =
    op.rehearsal === undefined
      ? ''
      : staging
        ? ' It was applied to staging first, gate passed.'
        : ' It was not applied to staging first: an approver must click Override before Apply.';
  const eyes = fourEyes ? ` Four eyes: ${mentionUser(op.requestedBy)} asked for it, so another approver applies it.` : '';
  const text = `${mentions} Review the Terraform plan of *${escapeMrkdwn(op.cluster)}* above (${escapeMrkdwn(terraformData(op).terraform?.summary ?? '')}; full plan attached) and click *Apply* on it if it is right.${promotion}${eyes} Apply is offered until ${formatTime(expiresAt)}.`;
  return { text, blocks: [section(text)] };
}

/**
 * The question before the apply once the Apply that started the change no longer holds (a failure or a
 * Retry spent it, or it waited too long): the same reviewed plan, applied only on a fresh approver's word.
 */
export function applyAgainRequest(op: Operation, approval: Approval, presentation: Presentation, step: Step): ChatMessage {
  const tf = terraformData(op).terraform;
  const text = approvalNotification(op, step, approval, presentation);
  // What the approver ticks (a replacement's boot ISO against the bot's sha256) sits above the buttons, with what it confirms.
  const ticks = presentation.approvalConfirmations?.(op, step) ?? [];
  const confirm = ticks.length > 0 ? [...isoBlocks(tf?.iso, 'Approve'), startConfirmBlock(op.id, approval.nonce, ticks)] : [];
  const earlier = op.approvals.filter((a) => a.step === approval.step && a.state === 'spent' && a.by !== undefined).at(-1);
  const why = earlier
    ? `The Apply by ${mentionUser(earlier.by!)} at ${formatTime(earlier.at ?? earlier.requestedAt)} no longer holds: a failure or a Retry came after it, or it waited too long. Nothing was applied since.`
    : 'Nothing was applied yet.';
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(approvalQuestion(op, step, presentation))}*`),
      { ...section(why), block_id: WHILE_WAITING },
      fields([
        ['Terraform commit', tf?.commit ? `\`${tf.commit.slice(0, 12)}\`` : '?'],
        ['Plan', `${escapeMrkdwn(tf?.summary ?? '?')}${tf?.planSha256 ? ` · sha256 \`${tf.planSha256.slice(0, 12)}…\`` : ''}`],
        ['Snapshot', op.snapshot ? `\`${op.snapshot.id}\`` : 'none yet'],
        ['Expires', formatTime(approval.expiresAt)],
      ]),
      ...confirm,
      approveOrStopButtons(op, approval, step, presentation, {
        title: 'Apply the reviewed plan?',
        text: escapeMrkdwn(
          `tofu apply of exactly the reviewed plan file on ${op.cluster}; the plan is checked against its hash and commit first.`,
        ),
        confirm: 'Approve',
        deny: 'Not yet',
      }),
    ],
  };
}
