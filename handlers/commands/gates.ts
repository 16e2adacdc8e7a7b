import { enqueueGates } from '../../src/queue/jobs.ts';
import { clusterFor, reportDestination, reportRequest, type ImmediateHandler } from './command-context.ts';

export const gates: ImmediateHandler<'gates'> = (command, slack, deps) => {
  const resolved = clusterFor(deps, slack, command.cluster);
  if (!resolved.ok) return { reply: resolved.reason };
  const { cluster } = resolved;
  const data = reportRequest(deps, slack, cluster);
  return {
    reply: `Checking *${cluster.name}* against the runbook's production gates; ${reportDestination(slack, cluster, 'the report')} in a few seconds.`,
    // The trigger id is unique per invocation, so a redelivered command maps to the same job.
    enqueue: () => enqueueGates(deps.readQueue, data, slack.trigger_id),
  };
};
