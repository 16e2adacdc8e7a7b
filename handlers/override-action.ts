import type { App, BlockAction, ButtonAction } from '@slack/bolt';
import { OVERRIDE_ACTION } from '../src/chat/buttons.ts';
import { clickRefusal } from './action-permissions.ts';
import { blockOperation, ephemeral, reply, type ActionDeps } from './operation-actions.ts';

const VALUE = /^(op-[a-z0-9]{4,40})\.([a-z0-9]{4,40})$/;

/**
 * An approver's explicit word to start a production upgrade that has no staging
 * rehearsal in the records. It only unlocks Start; the record says who overrode and when.
 */
export function registerOverrideAction(app: App, deps: ActionDeps): void {
  app.action<BlockAction<ButtonAction>>(OVERRIDE_ACTION, async ({ ack, body, action, respond }) => {
    await ack();
    const say = ephemeral(respond);
    const match = VALUE.exec(action.value ?? '');
    const op = match ? await deps.store.get(match[1]!) : undefined;
    if (!match || !op) return say('That button belongs to no operation the bot knows. Nothing changed.');
    if (body.channel?.id !== op.channel) return say(`\`${op.id}\`'s buttons work only in <#${op.channel}>. Nothing changed.`);
    const blockOp = blockOperation(action.block_id);
    if (blockOp !== undefined && blockOp !== op.id) return say('That button does not belong to the message it came from. Nothing changed.');
    const cluster = deps.inventory.clusters.find((c) => c.name === op.cluster);
    const refusal = await clickRefusal(deps.authorizer, deps.lifecycle.policy, cluster, OVERRIDE_ACTION, op, body.user.id);
    if (refusal !== undefined) return say(refusal);
    await reply(await deps.lifecycle.overrideRehearsal({ op, nonce: match[2]!, user: body.user.id, messageTs: body.message?.ts }), say);
  });
}
