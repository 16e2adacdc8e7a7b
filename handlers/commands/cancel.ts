import { operationRef } from '../../src/chat/operation-link.ts';
import { threadLink } from '../../src/ops/thread-link.ts';
import type { CommandHandler } from './command-context.ts';

export const cancel: CommandHandler<'cancel'> = async (command, slack, deps) => {
  const op = await deps.store.get(command.op);
  if (!op) return { reply: `There is no operation \`${command.op}\`. See \`/talos status\`.` };
  const cluster = deps.inventory.clusters.find((c) => c.name === op.cluster);
  if (!cluster || cluster.channel !== slack.channel_id)
    return { reply: `${operationRef(op.id, await threadLink(deps, op))} belongs to *${op.cluster}*; cancel it in <#${op.channel}>.` };
  if (!(await deps.authorizer.isMember(slack.user_id, [...cluster.operators, ...cluster.approvers]))) {
    return { reply: `Only operators and approvers of *${cluster.name}* may cancel its operations.` };
  }
  const result = await deps.lifecycle.cancel(op.id, slack.user_id);
  return { reply: result.ok ? (result.reply ?? '') : result.message };
};
