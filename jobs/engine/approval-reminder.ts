import type { Job } from 'bullmq';
import type { NonceJobData } from '../../src/queue/job-schemas.ts';
import type { OpsJobDeps } from './job-context.ts';
import { remindApprovers } from './approvals/remind.ts';

export { APPROVAL_REMINDER_JOB_NAME } from './approvals/remind.ts';

/** The job queued with an approval request, for its reminder before it expires (see `remindApprovers`). */
export function createApprovalReminderJob(deps: OpsJobDeps) {
  return async (job: Job<NonceJobData>): Promise<void> => {
    const { opId, nonce } = job.data;
    await remindApprovers(deps, opId, nonce);
  };
}
