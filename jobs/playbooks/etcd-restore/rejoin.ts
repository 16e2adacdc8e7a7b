import { errorText } from '../../../src/chat/error-text.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { WalkContext } from '../../engine/playbook.ts';
import { restoreData } from './data.ts';
import { RESET_ARGS, refuseUnlessStaging } from './reset.ts';

/** How many times one wait resets a control plane again before it stops and leaves the node to a person. */
export const MAX_REJOINS = 3;

/**
 * What a person reads about etcd's join limit: a wiped control plane waits in etcd's join loop for
 * 30 minutes (`EtcdJoinTimeout`), then its etcd service is Failed and stays so (etcd is not restartable
 * through the API) until the node reboots or is reset.
 */
export const JOIN_LIMIT =
  "A wiped control plane waits for 30 minutes in etcd's join loop (Preparing); then its etcd service is Failed and stays so until the node reboots or is reset, as etcd cannot be restarted through the API";

/** The command an operator may run to bring one control plane back into etcd's join loop. */
export function rebootCommand(node: string): string {
  return `talosctl -n ${node} --endpoints ${node} reboot`;
}

/**
 * A control plane whose etcd is Failed before the bootstrap, brought back into etcd's join loop: the
 * same reset the approvers approved (EPHEMERAL is wiped already, so it wipes nothing more), recorded
 * before it is asked. Never once the bootstrap is recorded: then the node's data may be the restore's.
 */
export async function resetAgain(ctx: WalkContext, op: Operation, node: string): Promise<string> {
  refuseUnlessStaging(ctx, op);
  const issuedAt = ctx.deps.now().toISOString();
  const { op: recorded } = await ctx.record((o) => {
    const data = restoreData(o);
    if (data.bootstrap !== undefined) return undefined;
    return { data: { ...data, rejoins: { ...data.rejoins, [node]: [...(data.rejoins[node] ?? []), issuedAt] } } };
  });
  if (!(restoreData(recorded).rejoins[node] ?? []).includes(issuedAt))
    throw new StepFailure(`the reset of ${node} again could not be recorded, so it was not asked`, [], { noRollback: true });
  try {
    await ctx.talosctl.run([...RESET_ARGS], [node], { signal: ctx.signal, endpoints: [node], timeoutMs: ctx.deps.timeouts.stepMs });
  } catch (error) {
    if (ctx.signal?.aborted) throw error;
    throw new StepFailure(
      `${node}'s etcd is Failed and its reset again failed: ${errorText(error)}. No bootstrap was issued. ${JOIN_LIMIT}. Safe next: ${rebootCommand(node)}, then Retry, which waits again`,
      [],
      { noRollback: true },
    );
  }
  return issuedAt;
}
