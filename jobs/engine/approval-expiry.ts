import type { Job } from 'bullmq';
import type { NonceJobData } from '../../src/queue/job-schemas.ts';
import type { OpsJobDeps } from './job-context.ts';
import { expireApproval } from './approvals/expire.ts';

/** The job queued with every approval request, for when it expires (see `expireApproval`). */
export function createApprovalExpiryJob(deps: OpsJobDeps) {
  return async (job: Job<NonceJobData>): Promise<void> => {
    const { opId, nonce } = job.data;
    await expireApproval(deps, opId, nonce);
  };
}
