import { operationRef } from '../../src/chat/operation-link.ts';
import { threadLink } from '../../src/ops/thread-link.ts';
import type { CommandHandler } from './command-context.ts';
import { enqueueRecord } from '../../src/queue/jobs.ts';

export const record: CommandHandler<'record'> = async (command, slack, deps) => {
  const op = await deps.store.get(command.op);
  if (!op) return { reply: `There is no operation \`${command.op}\`. See \`/talos status\`.` };
  const ref = operationRef(op.id, await threadLink(deps, op));
  if (op.channel !== slack.channel_id) return { reply: `${ref} belongs to *${op.cluster}*; ask for its record in <#${op.channel}>.` };
  return {
    reply: `Posting the maintenance record of ${ref} in its thread.`,
    enqueue: () => enqueueRecord(deps.readQueue, { opId: op.id, requestedBy: slack.user_id }, slack.trigger_id),
  };
};
