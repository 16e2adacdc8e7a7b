import { HealthJobData, jobIdFor } from '../../src/queue/job-schemas.ts';
import { clusterFor, JOB_OPTIONS, type ImmediateHandler } from './command-context.ts';

export const health: ImmediateHandler<'health'> = (command, slack, deps) => {
  const resolved = clusterFor(deps, slack, command.cluster);
  if (!resolved.ok) return { reply: resolved.reason };
  const data = HealthJobData.parse({ cluster: resolved.cluster.name, channel: slack.channel_id, requestedBy: slack.user_id, requestedAt: deps.now().toISOString() });
  return {
    reply: `Running the health gate on *${resolved.cluster.name}*; the verdict appears in this channel in a few seconds.`,
    // The trigger id is unique per invocation, so a redelivered command maps to the same job.
    enqueue: () => deps.readQueue.add('health', data, { ...JOB_OPTIONS, jobId: jobIdFor('health', slack.trigger_id) }),
  };
};
