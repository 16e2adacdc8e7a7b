import type { Job } from 'bullmq';
import { showDecision } from './approvals/edit.ts';
import type { OperationJobData } from '../../src/queue/job-schemas.ts';
import { enqueueEnded } from '../../src/queue/operation-jobs.ts';
import type { OpsJobDeps } from './job-context.ts';
import { refreshRoot } from './root-message.ts';

/**
 * After a cancel ended an operation that was waiting (a plan, an approval, a window, a stop):
 * the root shows it, every open request loses its buttons, and the thread records who
 * cancelled. Run as a job, so the command answers first and a Slack outage is retried.
 */
export function createCancelledJob(deps: OpsJobDeps) {
  return async (job: Job<OperationJobData>): Promise<void> => {
    const { opId } = job.data;
    const cancelled = await deps.store.get(opId);
    if (cancelled?.state !== 'cancelled') return;
    await refreshRoot(deps, cancelled);
    // A request can be in Slack before the run stored where: its entry's reply is the request.
    await deps.audit.flush(opId);
    const op = (await deps.store.get(opId)) ?? cancelled;
    for (const approval of op.approvals.filter((a) => a.state === 'pending')) {
      await showDecision(
        deps.chat,
        op,
        { ...approval, state: 'stopped', by: op.cancelRequestedBy, at: op.endedAt },
        deps.presentations(op.kind),
      );
    }
    if (!op.audit.some((e) => e.event === 'cancelled'))
      await deps.audit.record(opId, { actor: op.cancelRequestedBy ?? 'bot', event: 'cancelled', detail: op.reason });
    await enqueueEnded(deps.opsQueue, op);
  };
}
