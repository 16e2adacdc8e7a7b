import { jobIdFor } from '../../src/queue/job-schemas.ts';
import { clusterFor, JOB_OPTIONS, operatorRefusal, reportDestination, reportRequest, type CommandHandler } from './command-context.ts';

export const plan: CommandHandler<'plan'> = async (command, slack, deps) => {
  const resolved = clusterFor(deps, slack, command.cluster);
  if (!resolved.ok) return { reply: resolved.reason };
  const { cluster } = resolved;
  // Read-only, yet it reads Terraform state: only the cluster's operators. Its summary goes to the cluster's own channel.
  const refusal = await operatorRefusal(deps, slack, cluster, 'a Terraform plan');
  if (refusal !== undefined) return { reply: refusal };
  const data = reportRequest(deps, slack, cluster);
  return {
    reply: `Running \`tofu fmt\`, \`validate\` and \`plan\` for *${cluster.name}* (read-only: nothing is applied); ${reportDestination(slack, cluster, 'the summary')}.`,
    enqueue: () => deps.readQueue.add('plan', data, { ...JOB_OPTIONS, jobId: jobIdFor('plan', slack.trigger_id) }),
  };
};
