import type { Job } from 'bullmq';
import type { OperationJobData } from '../../src/queue/job-schemas.ts';
import type { Operation } from '../../src/ops/operation.ts';
import type { OpsJobDeps } from './job-context.ts';
import { operationRootMessage } from '../../src/chat/operation-root.ts';
import { refreshRoot } from './root-message.ts';

/** Why such a snapshot ends failed: what the operator reads in its root message and thread. */
export const RETIRED_SNAPSHOT_REASON =
  'the bot was updated before this snapshot was taken, and nothing was taken: run /talos snapshot again';

/**
 * The retired `snapshot` job, as the previous version queued it for `/talos snapshot` (now a
 * playbook's preflight and run). One left in Redis across an update carries an operation that
 * was created running with no steps, which no run can walk: it ends failed, with the reason in
 * its root message and thread, in one compare-and-set on that shape, so any other is left as it is.
 */
export function createRetiredSnapshotJob(deps: OpsJobDeps) {
  return async (job: Job<OperationJobData>): Promise<void> => {
    const { opId } = job.data;
    const now = deps.now().toISOString();
    const left = (o: Operation): boolean => o.kind === 'snapshot' && o.state === 'running' && o.steps.length === 0;
    let written = false;
    const failed = await deps.audit.record(
      opId,
      { actor: 'bot', event: 'etcd snapshot failed', detail: RETIRED_SNAPSHOT_REASON },
      undefined,
      (o) => {
        written = left(o);
        return written ? { ...o, state: 'failed', reason: RETIRED_SNAPSHOT_REASON, endedAt: now } : undefined;
      },
    );
    if (!written) return;
    deps.logger.warn({ op: opId, cluster: failed.cluster }, 'snapshot of the previous version ended failed');
    if (failed.rootTs !== undefined) await refreshRoot(deps, failed);
    else {
      const { ts } = await deps.chat.post(failed.channel, operationRootMessage(failed, deps.presentations(failed.kind)), {
        key: `${opId}-root`,
        maybeSent: true,
      });
      await deps.store.update(opId, (o) => (o.rootTs === undefined ? { ...o, rootTs: ts } : undefined));
    }
    await deps.audit.flush(opId);
  };
}
