import type { Job } from 'bullmq';
import { createApprovalExpiryJob } from './approval-expiry.ts';
import type { OpsJobDeps } from './job-context.ts';
import { createNodeRollbackJob } from './node-rollback.ts';
import { createSnapshotJob } from './snapshot-job.ts';
import { createTalosUpgradePreflightJob } from './talos-upgrade-preflight.ts';
import { createTalosUpgradeRunJob } from './talos-upgrade-run.ts';
import { createK8sUpgradePreflightJob } from './k8s-upgrade-preflight.ts';
import { createK8sUpgradeRunJob } from './k8s-upgrade-run.ts';
import { createRollbackPreflightJob } from './rollback-preflight.ts';
import { createRollbackRunJob } from './rollback-run.ts';
import { createRemovePreflightJob } from './remove-preflight.ts';
import { createRemoveRunJob } from './remove-run.ts';
import { createReconcileJob } from './reconcile-job.ts';

export type JobProcessor = (job: Job, signal?: AbortSignal) => Promise<unknown>;

/** The processors of the operations queue, by job name. */
export function createOpsJobs(deps: OpsJobDeps): Record<string, JobProcessor> {
  return {
    'talos-upgrade-preflight': createTalosUpgradePreflightJob(deps),
    'talos-upgrade-run': createTalosUpgradeRunJob(deps),
    'approval-expiry': createApprovalExpiryJob(deps),
    'node-rollback': createNodeRollbackJob(deps),
    snapshot: createSnapshotJob(deps),
    'k8s-upgrade-preflight': createK8sUpgradePreflightJob(deps),
    'k8s-upgrade-run': createK8sUpgradeRunJob(deps),
    'rollback-preflight': createRollbackPreflightJob(deps),
    'rollback-run': createRollbackRunJob(deps),
    'remove-preflight': createRemovePreflightJob(deps),
    'remove-run': createRemoveRunJob(deps),
    'ops-reconcile': createReconcileJob(deps),
  };
}
