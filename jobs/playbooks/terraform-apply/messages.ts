import { declaredNodes, type ClusterConfig } from '../../../src/config/inventory.ts';
import { inventoryLinesFor, type JoinedNode } from '../../../src/config/inventory-lines.ts';
import { terraformData } from './data.ts';
import { isoBlocks } from '../shared/boot-iso-texts.ts';
import { startConfirmBlock } from '../../../src/chat/operation-root.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import type { Presentation } from '../../../src/chat/presentation.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import {
  actions,
  context,
  escapeMrkdwn,
  formatTime,
  mention,
  mentionUser,
  plainTimes,
  preformatted,
  section,
} from '../../../src/chat/blocks.ts';
import { ACTION, buttonValue } from '../../../src/chat/buttons.ts';

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

/** The audit entry whose thread reply pages the approvers: it carries Apply and Reject, and is edited to the outcome. */
export const APPLY_OFFERED = 'apply offered to approvers';

/** What the paged message says the plan does, under its request: the effect, riskiest first, and the change counts. */
function planLines(op: Operation): string {
  const tf = terraformData(op).terraform;
  const effect = tf?.effect ?? [];
  const commit = tf?.commit ? ` · commit \`${tf.commit.slice(0, 12)}\`` : '';
  const head = `*Terraform plan of ${escapeMrkdwn(op.cluster)}:* ${escapeMrkdwn(tf?.summary ?? '?')}${commit}`;
  return [head, ...effect.map((l) => `• ${escapeMrkdwn(l)}`)].join('\n');
}

/**
 * The call to review a plan that may be applied, broadcast so the approvers it names are paged: what
 * it does, where it stands on promotion, until when, and the Apply and Reject buttons themselves, so
 * the approver decides where the notification lands. Edited to its outcome once someone acted.
 */
export function applyReviewRequest(
  op: Operation,
  approvers: readonly string[],
  expiresAt: string,
  fourEyes: boolean,
  presentation: Presentation,
): ChatMessage {
  const mentions = approvers.map(mention).join(' ');
  const staging = op.rehearsal?.stagingOp !== undefined;
  const promotion =
    op.rehearsal === undefined
      ? ''
      : staging
        ? ' It was applied to staging first, gate passed.'
        : ' It was not applied to staging first: two approvers must click Override on the plan above before Apply.';
  const eyes = fourEyes ? ` Four eyes: ${mentionUser(op.requestedBy)} asked for it, so another approver applies it.` : '';
  const text = `${mentions} Review the Terraform plan of *${escapeMrkdwn(op.cluster)}* (${escapeMrkdwn(terraformData(op).terraform?.summary ?? '')}; the diff is above, the full plan attached) and click *Apply* if it is right, or *Reject*.${promotion}${eyes} Apply is offered until ${formatTime(expiresAt)}.`;
  const blocks = [section(text), section(planLines(op))];
  const nonce = op.planNonce;
  if (nonce !== undefined) {
    const ticks = presentation.startConfirmations?.(op) ?? [];
    if (ticks.length > 0) blocks.push(...isoBlocks(terraformData(op).terraform?.iso), startConfirmBlock(op.id, nonce, ticks));
    blocks.push(
      actions(`paged-${op.id}-${nonce}`, [
        {
          text: 'Apply',
          actionId: ACTION.start,
          value: buttonValue(op.id, nonce),
          style: 'primary',
          confirm: {
            title: presentation.startTitle,
            text: `This applies the reviewed plan to ${op.cluster} exactly as shown.`,
            confirm: 'Apply',
            deny: 'Not yet',
          },
        },
        { text: 'Reject', actionId: ACTION.cancelPlan, value: buttonValue(op.id, nonce), style: 'danger' },
      ]),
    );
  }
  return { text, blocks };
}

/** The paged message's first line once someone acted: who applied or rejected it, when, and how it ended. */
export function applyOutcomeLine(op: Operation): string | undefined {
  const applied =
    op.startedBy === undefined ? undefined : `Applied by ${mentionUser(op.startedBy)} ${formatTime(op.startedAt ?? op.createdAt)}`;
  if (applied === undefined) {
    if (op.state !== 'cancelled') return undefined;
    const when = formatTime(op.endedAt ?? op.createdAt);
    return op.cancelRequestedBy === undefined
      ? `⌛ Not applied: the plan expired ${when} · nothing was applied`
      : `✖ Rejected by ${mentionUser(op.cancelRequestedBy)} ${when} · nothing was applied`;
  }
  switch (op.state) {
    case 'completed':
      return `✅ ${applied} · gate passed`;
    case 'failed':
      return `❌ ${applied} · failed: ${escapeMrkdwn(op.reason ?? 'see the thread')}`;
    case 'cancelled':
      return `✖ ${applied} · then cancelled${op.cancelRequestedBy ? ` by ${mentionUser(op.cancelRequestedBy)}` : ''} · ${escapeMrkdwn(op.reason ?? '')}`;
    case 'awaiting-approval':
    case 'paused':
      return `⏸ ${applied} · waiting for an approver again: see the thread`;
    case 'waiting-window':
      return `⏸ ${applied} · waiting for the maintenance window`;
    default:
      return `⏳ ${applied} · applying now: progress in the thread`;
  }
}

/** The paged message as it ends: its outcome first, then what the plan did; no buttons. */
export function applyPagedOutcome(op: Operation): ChatMessage | undefined {
  const outcome = applyOutcomeLine(op);
  if (outcome === undefined) return undefined;
  return { text: plainTimes(outcome), blocks: [section(`*${outcome}*`), context(planLines(op))] };
}
