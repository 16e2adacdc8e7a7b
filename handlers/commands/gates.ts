import { GatesJobData, jobIdFor } from '../../src/queue/job-schemas.ts';
import { clusterFor, JOB_OPTIONS, type ImmediateHandler } from './command-context.ts';

export const gates: ImmediateHandler<'gates'> = (command, slack, deps) => {
  const resolved = clusterFor(deps, slack, command.cluster);
  if (!resolved.ok) return { reply: resolved.reason };
  const data = GatesJobData.parse({ cluster: resolved.cluster.name, channel: slack.channel_id, requestedBy: slack.user_id, requestedAt: deps.now().toISOString() });
  return {
    reply: `Checking *${resolved.cluster.name}* against the runbook's production gates; the report appears in this channel in a few seconds.`,
    // The trigger id is unique per invocation, so a redelivered command maps to the same job.
    enqueue: () => deps.readQueue.add('gates', data, { ...JOB_OPTIONS, jobId: jobIdFor('gates', slack.trigger_id) }),
  };
};
