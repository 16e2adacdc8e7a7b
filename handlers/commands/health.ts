import { enqueueHealth } from '../../src/queue/jobs.ts';
import { clusterFor, reportDestination, reportRequest, type ImmediateHandler } from './command-context.ts';

export const health: ImmediateHandler<'health'> = (command, slack, deps) => {
  const resolved = clusterFor(deps, slack, command.cluster);
  if (!resolved.ok) return { reply: resolved.reason };
  const { cluster } = resolved;
  const data = reportRequest(deps, slack, cluster);
  return {
    // Answered in the ack, before Redis is read: a request while the cluster's gate runs learns from the job that it joined that gate.
    reply: `Running the health gate on *${cluster.name}*; ${reportDestination(slack, cluster, 'the verdict')} in a few seconds.`,
    // The trigger id is unique per invocation, so a redelivered command maps to the same job.
    enqueue: () => enqueueHealth(deps.readQueue, data, slack.trigger_id),
  };
};
