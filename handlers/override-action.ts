import type { App, BlockAction, ButtonAction } from '@slack/bolt';
import { operationRootMessage } from '../src/chat/operation-root.ts';
import { OVERRIDE_ACTION } from '../src/chat/buttons.ts';
import { fourEyesRefusal } from '../src/ops/transitions.ts';
import { blockOperation, type ActionDeps } from './operation-actions.ts';

const VALUE = /^(op-[a-z0-9]{4,40})\.([a-z0-9]{4,40})$/;

/**
 * An approver's explicit word to start a production upgrade that has no staging
 * rehearsal in the records. It only unlocks Start; the record says who overrode and when.
 */
export function registerOverrideAction(app: App, deps: ActionDeps): void {
  app.action<BlockAction<ButtonAction>>(OVERRIDE_ACTION, async ({ ack, body, action, respond }) => {
    await ack();
    const say = (text: string) => respond({ response_type: 'ephemeral', replace_original: false, text });
    const match = VALUE.exec(action.value ?? '');
    const op = match ? await deps.store.get(match[1]!) : undefined;
    if (!match || !op) return void (await say('That button belongs to no operation the bot knows. Nothing changed.'));
    if (body.channel?.id !== op.channel) return void (await say(`\`${op.id}\`'s buttons work only in <#${op.channel}>. Nothing changed.`));
    const blockOp = blockOperation(action.block_id);
    if (blockOp !== undefined && blockOp !== op.id) return void (await say('That button does not belong to the message it came from. Nothing changed.'));
    const cluster = deps.inventory.clusters.find((c) => c.name === op.cluster);
    if (!cluster || !(await deps.authorizer.isMember(body.user.id, cluster.approvers))) {
      return void (await say(`Only approvers of *${op.cluster}* may override the staging rehearsal. Nothing changed.`));
    }
    const fourEyes = fourEyesRefusal(cluster, op, body.user.id, 'override the staging rehearsal');
    if (fourEyes !== undefined) return void (await say(fourEyes));
    const at = deps.now().toISOString();
    // The override and its entry are one write; the edited plan shows it, the entry goes to the thread with the next reply.
    const detail = op.kind === 'terraform-apply' ? `commit ${op.terraform?.commit ?? '?'} was not applied in staging according to the records` : `${op.target.version ?? ''} was not upgraded in staging according to the records`;
    const entry = { actor: body.user.id, event: 'override: no staging rehearsal', detail };
    const { op: after, changed } = await deps.audit.transition(
      op.id,
      entry,
      (o) => (o.state === 'planned' && o.planNonce === match[2] && o.override === undefined && o.rehearsal?.stagingOp === undefined ? { ...o, override: { by: body.user.id, at } } : undefined),
      { hold: true },
    );
    if (!changed) return void (await say(`\`${op.id}\` is ${after.state}${after.override ? `, already overridden by <@${after.override.by}>` : ''}. Nothing changed.`));
    if (after.rootTs) await deps.chat.update(after.channel, after.rootTs, operationRootMessage(after));
  });
}
