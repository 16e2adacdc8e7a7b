import type { JobProcessor } from '../src/queue/workers.ts';
import { createApprovalExpiryJob } from './engine/approval-expiry.ts';
import { APPROVAL_REMINDER_JOB_NAME, createApprovalReminderJob } from './engine/approval-reminder.ts';
import { createCancelledJob } from './engine/cancelled.ts';
import { PREFLIGHT_JOB_NAME, RUN_JOB_NAME } from '../src/queue/operation-jobs.ts';
import { createPreflightJob } from './engine/preflight.ts';
import { createRunJob } from './engine/walk.ts';
import { createHealthGateJob, type HealthGateJobDeps } from './health-gate-job.ts';
import type { OpsJobDeps } from './job-context.ts';
import { PLAYBOOKS } from './playbooks/index.ts';
import { createReadinessGatesJob } from './readiness-gates-job.ts';
import { createReconcileJob } from './reconcile-job.ts';
import { createRecordJob } from './record-job.ts';
import { createSnapshotJob } from './snapshot-job.ts';
import { createTofuPlanJob, type TofuPlanJobDeps } from './tofu-plan-job.ts';

/** The processors of the operations queue, by job name. */
export function createOpsJobs(deps: OpsJobDeps): Record<string, JobProcessor> {
  return {
    [PREFLIGHT_JOB_NAME]: createPreflightJob(deps, PLAYBOOKS),
    [RUN_JOB_NAME]: createRunJob(deps, PLAYBOOKS),
    'approval-expiry': createApprovalExpiryJob(deps),
    [APPROVAL_REMINDER_JOB_NAME]: createApprovalReminderJob(deps),
    'operation-cancelled': createCancelledJob(deps),
    snapshot: createSnapshotJob(deps),
    'ops-reconcile': createReconcileJob(deps),
  };
}

/** What the read-only jobs are given: the operation jobs' deps, where gate results go, and where plans are written. */
export interface ReadJobDeps extends OpsJobDeps, Pick<HealthGateJobDeps, 'onReport' | 'onGateError' | 'runningGates'> {
  /** Private directory under which each plan gets its own temporary directory. */
  tempBase: TofuPlanJobDeps['tempBase'];
}

/** The processors of the read-only queue, by job name: they touch nothing. */
export function createReadJobs(deps: ReadJobDeps): Record<string, JobProcessor> {
  const { inventory, access, store, chat, logger, tofu, now, timeouts } = deps;
  return {
    health: createHealthGateJob({ inventory, access, chat, logger, probeTimeoutMs: timeouts.probeMs, onReport: deps.onReport, onGateError: deps.onGateError, runningGates: deps.runningGates }),
    gates: createReadinessGatesJob({ inventory, access, store, chat, logger, probeTimeoutMs: timeouts.probeMs, now }),
    plan: createTofuPlanJob({ inventory, tofu, chat, logger, planTimeoutMs: timeouts.stepMs, tempBase: deps.tempBase }),
    record: createRecordJob({ store, chat }),
  };
}
