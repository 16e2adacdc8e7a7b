import type { App, BlockAction, ButtonAction, RespondFn } from '@slack/bolt';
import { ACTION, PLAN_AGAIN_NONCE } from '../src/chat/buttons.ts';
import type { Inventory } from '../src/config/inventory.ts';
import type { Block } from '../src/port/chat-port.ts';
import type { Logger } from '../src/log/logger.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';
import type { Lifecycle } from '../jobs/engine/lifecycle/lifecycle.ts';
import type { MoveResult } from '../jobs/engine/lifecycle/deps.ts';
import type { OperationClick } from '../jobs/engine/lifecycle/start.ts';
import { redisLostRefusal } from '../src/chat/redis-lost.ts';
import { clickRefusal } from './action-permissions.ts';
import type { Authorizer } from './authorize.ts';
import { openStopReason, registerStopReason, STOPS, VALUE } from './stop-reason.ts';

export interface ActionDeps {
  inventory: Inventory;
  /** Read only: the operation a button names. */
  store: Pick<OperationStore, 'get'>;
  authorizer: Authorizer;
  logger: Logger;
  lifecycle: Lifecycle;
  /** Why nothing may change once Redis lost the bot's data; undefined while it is whole. */
  redisLost?: () => string | undefined;
}

/**
 * The operation a button's block names: the bot builds every block that holds buttons as
 * `<kind>-<op>-<nonce>`. A block of another operation than the value's means the payload was
 * put together from two messages. Whether a button of the same operation is still current is
 * for its nonce to say.
 */
export function blockOperation(blockId: string | undefined): string | undefined {
  return /^[a-z]+-(op-[a-z0-9]{4,40})-[a-z0-9]{4,40}$/.exec(blockId ?? '')?.[1];
}

type Say = (text: string) => Promise<void>;

/** Shared checks of every button: a well-formed value, an operation that exists, the right channel. */
async function loadClick(deps: ActionDeps, body: BlockAction, action: ButtonAction, say: Say): Promise<OperationClick | undefined> {
  const match = VALUE.exec(action.value ?? '');
  if (!match) {
    await say('That button carries no valid operation. Nothing changed.');
    return undefined;
  }
  const op = await deps.store.get(match[1]!);
  if (!op) {
    await say(`This button belongs to operation \`${match[1]!}\`, which the bot does not know. Nothing changed.`);
    return undefined;
  }
  if (body.channel?.id !== op.channel) {
    await say(`\`${op.id}\` belongs to *${op.cluster}*; its buttons work only in <#${op.channel}>. Nothing changed.`);
    return undefined;
  }
  if (!deps.inventory.clusters.some((c) => c.name === op.cluster)) {
    await say(`\`${op.id}\` belongs to *${op.cluster}*, a cluster this bot does not serve. Nothing changed.`);
    return undefined;
  }
  const blockOp = blockOperation(action.block_id);
  if (blockOp !== undefined && blockOp !== op.id) {
    await say('That button does not belong to the message it came from. Nothing changed.');
    return undefined;
  }
  const ticked = tickedFor(body, op.id, match[2]!);
  return { op, nonce: match[2]!, messageTs: body.message?.ts, user: body.user.id, ...(ticked.length > 0 ? { ticked } : {}) };
}

/**
 * The values of the plan's checkboxes the person had ticked when clicking: Slack sends every input of the
 * message in `state.values`, by block. Only the block of this operation and nonce counts.
 */
export function tickedFor(body: BlockAction, opId: string, nonce: string): string[] {
  const values = (body.state as { values?: Record<string, Record<string, unknown>> } | undefined)?.values ?? {};
  const input = values[`confirm-${opId}-${nonce}`]?.[ACTION.startConfirm] as { selected_options?: { value?: unknown }[] } | undefined;
  return (input?.selected_options ?? []).flatMap((o) => (typeof o.value === 'string' ? [o.value] : []));
}

/** Tells the person what the move did or why it did not, then does what follows the answer. */
export async function reply(result: MoveResult, say: Say): Promise<void> {
  if (!result.ok) return say(result.message);
  if (result.reply !== undefined) await say(result.reply);
  await result.followUp?.();
}

interface Button {
  /** The refusal when the button names nothing of its operation; part of reading the click, so asked before who clicked. */
  unknownTarget?: (click: OperationClick) => string | undefined;
  move: (lifecycle: Lifecycle, click: OperationClick) => Promise<MoveResult>;
}

const approvalButton = (decision: 'approved' | 'stopped'): Button => ({
  unknownTarget: ({ op, nonce }) =>
    op.approvals.some((a) => a.nonce === nonce)
      ? undefined
      : `This approval button is not one \`${op.id}\` is waiting on (a stale or altered button). Nothing changed.`,
  move: (lifecycle, click) => lifecycle.decide(click, decision),
});

/** What each button of an operation asks the lifecycle to do. */
const BUTTONS: Readonly<Record<string, Button>> = {
  [ACTION.start]: { move: (lifecycle, click) => lifecycle.start(click) },
  [ACTION.cancelPlan]: { move: (lifecycle, click) => lifecycle.cancelPlan(click) },
  [ACTION.stopAfter]: { move: (lifecycle, click) => lifecycle.stopAfterStep(click) },
  [ACTION.approve]: approvalButton('approved'),
  [ACTION.stop]: approvalButton('stopped'),
  [ACTION.take]: { ...approvalButton('approved'), move: (lifecycle, click) => lifecycle.takeApprovals(click) },
  [ACTION.apply]: approvalButton('approved'),
  [ACTION.cancelApply]: approvalButton('stopped'),
  [ACTION.rollback]: { move: (lifecycle, click) => lifecycle.requestRollback(click) },
  [ACTION.rerequest]: { move: (lifecycle, click) => lifecycle.rerequestApproval(click) },
  [ACTION.retry]: { move: (lifecycle, click) => lifecycle.retry(click) },
  [ACTION.windowOverride]: { move: (lifecycle, click) => lifecycle.overrideWindow(click) },
  [ACTION.planAgain]: {
    unknownTarget: ({ nonce }) => (nonce !== PLAN_AGAIN_NONCE ? 'That button does not ask for anything. Nothing changed.' : undefined),
    move: (lifecycle, click) => lifecycle.planAgain(click),
  },
};

/** The buttons of an operation. Each acks at once, then reads the click, checks who clicked, and asks the lifecycle. */
export function registerOperationActions(app: App, deps: ActionDeps): void {
  registerStopReason(app, deps);
  // A tick is the client's state until the Start click carries it; Slack still sends each change and wants its ack.
  app.action(ACTION.startConfirm, async ({ ack }) => {
    await ack();
  });
  for (const [actionId, button] of Object.entries(BUTTONS)) {
    app.action<BlockAction<ButtonAction>>(actionId, async ({ ack, body, action, respond, client }) => {
      await ack();
      const say = ephemeral(respond);
      // Before the operation is read: after a flush Redis no longer knows it, and an older copy's is no record to act on.
      const lost = deps.redisLost?.();
      if (lost !== undefined) return say(redisLostRefusal(lost));
      const click = await loadClick(deps, body, action, say);
      if (!click) return;
      deps.logger.info({ op: click.op.id, cluster: click.op.cluster, user: click.user, action: actionId }, 'button clicked');
      const unknown = button.unknownTarget?.(click);
      if (unknown !== undefined) return say(unknown);
      const cluster = deps.inventory.clusters.find((c) => c.name === click.op.cluster);
      const refusal = await clickRefusal(deps.authorizer, deps.lifecycle.policy, cluster, actionId, click.op, click.user);
      if (refusal !== undefined) return say(refusal);
      // A Stop asks for its reason in a modal and stops on its Submit; a modal that cannot open (the trigger expired) stops now.
      if (STOPS.has(actionId) && (await openStopReason(client, deps.lifecycle.policy, body.trigger_id, click, deps.logger))) return;
      await reply(await button.move(deps.lifecycle, click), say);
    });
  }
}

/** A private answer under the clicked message, which stays as it is. */
export function ephemeral(respond: RespondFn): (text: string, blocks?: Block[]) => Promise<void> {
  return async (text, blocks) => {
    await respond({ response_type: 'ephemeral', replace_original: false, text, ...(blocks ? { blocks } : {}) });
  };
}
