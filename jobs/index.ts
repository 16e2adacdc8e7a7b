import type { Job } from 'bullmq';
import { createApprovalExpiryJob } from './engine/approval-expiry.ts';
import { createCancelledJob } from './engine/cancelled.ts';
import { PREFLIGHT_JOB_NAME, RUN_JOB_NAME } from '../src/queue/operation-jobs.ts';
import { createPreflightJob } from './engine/preflight.ts';
import { createRunJob } from './engine/walk.ts';
import type { OpsJobDeps } from './job-context.ts';
import { PLAYBOOKS } from './playbooks/index.ts';
import { createReconcileJob } from './reconcile-job.ts';
import { createSnapshotJob } from './snapshot-job.ts';

export type JobProcessor = (job: Job, signal?: AbortSignal) => Promise<unknown>;

/** The processors of the operations queue, by job name. */
export function createOpsJobs(deps: OpsJobDeps): Record<string, JobProcessor> {
  return {
    [PREFLIGHT_JOB_NAME]: createPreflightJob(deps, PLAYBOOKS),
    [RUN_JOB_NAME]: createRunJob(deps, PLAYBOOKS),
    'approval-expiry': createApprovalExpiryJob(deps),
    'operation-cancelled': createCancelledJob(deps),
    snapshot: createSnapshotJob(deps),
    'ops-reconcile': createReconcileJob(deps),
  };
}
