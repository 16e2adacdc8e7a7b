import type { Operation } from '../ops/operation.ts';
import type { Block, ChatMessage } from '../port/chat-port.ts';
import { checkedByBot, rehearsalBlocks } from './rehearsal-message.ts';
import { actions, context, escapeMrkdwn, fields, formatTime, header, mentionUser, plainTimes, section } from './blocks.ts';
import { boardBlocks, outcomeLine, stepLines } from './status-board.ts';
import { ACTION, buttonValue, PLAN_AGAIN_NONCE } from './buttons.ts';
import type { Presentation, StartConfirmation } from './presentation.ts';
import { escapeMrkdwnKeepingLinks } from './operation-link.ts';

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

function stateText(op: Operation, presentation: Presentation): string {
  const own = presentation.stateText?.(op);
  if (own !== undefined) return own;
  return op.state === 'planned' ? (presentation.plannedText ?? STATE_TEXT.planned) : STATE_TEXT[op.state];
}

/**
 * The operation's root message: the plan; once running, a live status board edited at each phase
 * (see `status-board.ts`); once ended, led by the outcome and the duration. `now` is when it is
 * drawn, for the minutes waited so far; without it only the times are shown.
 */
export function operationRootMessage(op: Operation, presentation: Presentation, now?: Date): ChatMessage {
  const kind = presentation;
  const review = presentation.reviewItems;
  const title = kind.title(op);
  const outcome = outcomeLine(op, presentation);
  const blocks = [
    ...(outcome !== undefined ? [section(`*${outcome}*`)] : []),
    header(title),
    // The plan leads with what it does to the cluster; once the operation ended, its outcome leads instead.
    ...(op.endedAt === undefined && (op.consequences?.length ?? 0) > 0
      ? [section(op.consequences!.map((c) => `*${escapeMrkdwn(c)}*`).join('\n'))]
      : []),
    fields([
      ['Operation', `\`${op.id}\``],
      ['State', stateText(op, presentation)],
      ['Requested by', mentionUser(op.requestedBy)],
      ['Started by', op.startedBy ? `${mentionUser(op.startedBy)} at ${formatTime(op.startedAt ?? op.createdAt)}` : '—'],
    ]),
    ...(kind.details?.(op) ?? []),
    ...boardBlocks(op, presentation, now),
  ];
  if (op.state === 'refused') {
    // A kind that words its own state (a plan that changes nothing) was not refused in any sense worth listing.
    if (presentation.stateText?.(op) === undefined)
      // A refusal may name the operation that holds the cluster, by a link to its thread. Failed checks read "Blocking:" everywhere.
      blocks.push(
        section(`*Blocking:* refused before touching anything.\n${op.refusals.map((r) => `• ${escapeMrkdwnKeepingLinks(r)}`).join('\n')}`),
      );
  } else {
    blocks.push(section(`*Steps* (${kind.order}):\n${stepLines(op, presentation).join('\n')}`));
    const line = kind.context(op);
    if (line) blocks.push(context(line));
  }
  if (op.notes.length > 0) blocks.push(context(op.notes.map((n) => escapeMrkdwn(n)).join('\n')));
  blocks.push(...rehearsalBlocks(op, presentation.rehearsal));
  if (op.state === 'planned' && op.planNonce) {
    // An item the bot's records answer is shown checked by the bot: Start does not make a person vouch for it.
    const byBot = checkedByBot(op, review);
    const toConfirm = review.filter((r) => !byBot.some((b) => b.item === r));
    const confirm =
      review.length > 0
        ? `*Confirm before starting (runbook):*\n${[
            ...toConfirm.map((r) => `☐ ${r}`),
            ...byBot.map((b) => `✓ ${b.item}: checked by the bot (\`${b.found}\` completed)`),
          ].join('\n')}`
        : '';
    const ticks = presentation.startConfirmations?.(op) ?? [];
    blocks.push(
      section(`*Gates:* ${kind.gates}\n${confirm}`.trimEnd()),
      ...(ticks.length > 0 ? [startConfirmBlock(op.id, op.planNonce, ticks)] : []),
      actions(`plan-${op.id}-${op.planNonce}`, [
        {
          text: kind.startLabel ?? 'Start',
          actionId: ACTION.start,
          value: buttonValue(op.id, op.planNonce),
          style: 'primary',
          confirm: {
            title: kind.startTitle,
            text:
              toConfirm.length > 0
                ? `By starting you confirm: ${toConfirm.join('; ')}.`
                : `This applies the reviewed plan to ${op.cluster} exactly as shown.`,
            confirm: kind.startLabel ?? 'Start',
            deny: 'Not yet',
          },
        },
        { text: 'Cancel', actionId: ACTION.cancelPlan, value: buttonValue(op.id, op.planNonce) },
      ]),
    );
  }
  if (op.reason && (op.state === 'failed' || op.state === 'cancelled')) blocks.push(section(`*Reason:* ${escapeMrkdwn(op.reason)}`));
  blocks.push(...(presentation.closing?.(op) ?? checkAgainBlocks(op)));
  // Notifications and the channel list show the text: a finished operation leads with its outcome there too.
  const text =
    presentation.rootText?.(op) ??
    (outcome !== undefined ? `${plainTimes(outcome)} (${op.id})` : `${title} — ${stateText(op, presentation)} (${op.id})`);
  return { text, blocks };
}

/**
 * The checkboxes the starter ticks before Start (or an approver before Approve), in an actions block of the
 * message's nonce: Slack sends their state with the click, and the lifecycle refuses it without every one.
 */
export function startConfirmBlock(opId: string, nonce: string, ticks: readonly StartConfirmation[]): Block {
  return {
    type: 'actions',
    block_id: `confirm-${opId}-${nonce}`,
    elements: [
      {
        type: 'checkboxes',
        action_id: ACTION.startConfirm,
        options: ticks.map((t) => ({
          text: { type: 'mrkdwn', text: t.text },
          value: t.value,
          ...(t.description === undefined ? {} : { description: { type: 'mrkdwn', text: t.description } }),
        })),
      },
    ],
  };
}

/** A refused request offers to check again, once: the preflight runs afresh, since what refused it may have passed. */
function checkAgainBlocks(op: Operation): Block[] {
  if (op.state !== 'refused') return [];
  const again = op.data?.['replannedAs'];
  if (typeof again === 'string') return [context(`Requested again as \`${again}\`.`)];
  return [
    actions(`again-${op.id}-${PLAN_AGAIN_NONCE}`, [
      { text: 'Check again', actionId: ACTION.planAgain, value: buttonValue(op.id, PLAN_AGAIN_NONCE) },
    ]),
  ];
}
