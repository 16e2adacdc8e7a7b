import { newOperation, operatorCluster, type CommandHandler } from './command-context.ts';

/**
 * `/talos plan`: the runbook's routine configuration change. The plan is kept, reviewed in the
 * cluster's channel, and applied exactly as saved only after an approver's Apply; so, like any
 * mutating command, it is taken only in the cluster's own channel, from one of its operators.
 */
export const plan: CommandHandler<'plan'> = async (command, slack, deps) => {
  const resolved = await operatorCluster(deps, slack, command.cluster, 'a Terraform plan');
  if (!resolved.ok) return { reply: resolved.reason };
  const { cluster } = resolved;
  const op = newOperation(deps, 'terraform-apply', cluster, slack, 'preflight');
  return {
    reply: `Running \`tofu fmt\`, \`validate\` and \`plan\` for *${cluster.name}* (\`${op.id}\`); the plan appears in this channel. Nothing is applied before an approver clicks Apply on it.`,
    enqueue: () => deps.lifecycle.request(op),
  };
};
