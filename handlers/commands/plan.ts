import { jobIdFor, PlanJobData } from '../../src/queue/job-schemas.ts';
import { JOB_OPTIONS, operatorCluster, type CommandHandler } from './command-context.ts';

export const plan: CommandHandler<'plan'> = async (command, slack, deps) => {
  // Read-only, yet it reads Terraform state: only operators, and only where its thread belongs.
  const resolved = await operatorCluster(deps, slack, command.cluster, 'a Terraform plan');
  if (!resolved.ok) return { reply: resolved.reason };
  const data = PlanJobData.parse({ cluster: resolved.cluster.name, channel: slack.channel_id, requestedBy: slack.user_id, requestedAt: deps.now().toISOString() });
  return {
    reply: `Running \`tofu fmt\`, \`validate\` and \`plan\` for *${resolved.cluster.name}* (read-only: nothing is applied); the summary appears in this channel.`,
    enqueue: () => deps.readQueue.add('plan', data, { ...JOB_OPTIONS, jobId: jobIdFor('plan', slack.trigger_id) }),
  };
};
