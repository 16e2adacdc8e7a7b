import { statusText } from '../../src/chat/status-message.ts';
import type { CommandHandler } from './command-context.ts';

export const status: CommandHandler<'status'> = async (_command, slack, deps) => {
  const clusters = deps.inventory.clusters.filter((c) => c.channel === slack.channel_id);
  const shown = clusters.length > 0 ? clusters : deps.inventory.clusters;
  const byCluster = await Promise.all(
    shown.map(async (c) => ({ cluster: c.name, holder: await deps.lock.holder(c.name), ops: await deps.store.listForCluster(c.name, 10) })),
  );
  return { reply: statusText(byCluster) };
};
