import { newOperation, operatorCluster, type CommandHandler } from './command-context.ts';

export const snapshot: CommandHandler<'snapshot'> = async (command, slack, deps) => {
  const resolved = await operatorCluster(deps, slack, command.cluster, 'an etcd snapshot');
  if (!resolved.ok) return { reply: resolved.reason };
  const op = newOperation(deps, 'snapshot', resolved.cluster, slack, 'preflight');
  return {
    reply: `Taking an etcd snapshot of *${resolved.cluster.name}* (\`${op.id}\`).`,
    enqueue: () => deps.lifecycle.request(op),
  };
};
