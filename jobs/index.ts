import type { Queue } from 'bullmq';
import type { JobProcessor } from '../src/queue/workers.ts';
import { createApprovalExpiryJob } from './engine/approval-expiry.ts';
import { APPROVAL_REMINDER_JOB_NAME, createApprovalReminderJob } from './engine/approval-reminder.ts';
import { createCancelledJob } from './engine/cancelled.ts';
import { ENDED_JOB_NAME, PLAN_EXPIRY_JOB_NAME, PREFLIGHT_JOB_NAME, RUN_JOB_NAME } from '../src/queue/operation-jobs.ts';
import { createEndedJob } from './engine/ended.ts';
import { createPlanExpiryJob } from './engine/plan-expiry.ts';
import { createPreflightJob } from './engine/preflight.ts';
import { createRunJob } from './engine/walk.ts';
import { createHealthGateJob, standardGate, type HealthGateJobDeps } from './health-gate-job.ts';
import type { ScheduledGateState } from '../src/ops/scheduled-gate-state.ts';
import { createRetentionSweepJob, RETENTION_SWEEP_JOB_NAME } from './retention-sweep-job.ts';
import { createGateSummaryJob, createScheduledGateJob, GATE_SUMMARY_JOB_NAME, SCHEDULED_GATE_JOB_NAME } from './scheduled-gate-job.ts';
import { createScheduledSnapshotJob, SCHEDULED_SNAPSHOT_JOB_NAME, type ScheduledSnapshotJobDeps } from './scheduled-snapshot-job.ts';
import type { OpsJobDeps } from './job-context.ts';
import { PLAYBOOKS } from './playbooks/index.ts';
import { createReadinessGatesJob } from './readiness-gates-job.ts';
import { createReconcileJob } from './reconcile-job.ts';
import { createRecordJob } from './record-job.ts';
import { createSnapshotJob } from './snapshot-job.ts';

/** The processors of the operations queue, by job name. */
export function createOpsJobs(deps: OpsJobDeps): Record<string, JobProcessor> {
  return {
    [PREFLIGHT_JOB_NAME]: createPreflightJob(deps, PLAYBOOKS),
    [RUN_JOB_NAME]: createRunJob(deps, PLAYBOOKS),
    'approval-expiry': createApprovalExpiryJob(deps),
    [APPROVAL_REMINDER_JOB_NAME]: createApprovalReminderJob(deps),
    'operation-cancelled': createCancelledJob(deps),
    [ENDED_JOB_NAME]: createEndedJob(deps, PLAYBOOKS),
    [PLAN_EXPIRY_JOB_NAME]: createPlanExpiryJob(deps),
    snapshot: createSnapshotJob(deps),
    'ops-reconcile': createReconcileJob(deps),
  };
}

/** What the read-only jobs are given: the operation jobs' deps and where gate results go. */
export type ReadJobDeps = OpsJobDeps & Pick<HealthGateJobDeps, 'onReport' | 'onGateError' | 'runningGates'>;

/** The processors of the read-only queue, by job name: they touch nothing. */
export function createReadJobs(deps: ReadJobDeps): Record<string, JobProcessor> {
  const { inventory, access, store, chat, logger, now, timeouts } = deps;
  return {
    health: createHealthGateJob({ inventory, access, chat, logger, probeTimeoutMs: timeouts.probeMs, onReport: deps.onReport, onGateError: deps.onGateError, runningGates: deps.runningGates }),
    gates: createReadinessGatesJob({ inventory, access, store, chat, logger, probeTimeoutMs: timeouts.probeMs, now }),
    record: createRecordJob({ store, chat }),
  };
}

/** What the scheduled jobs are given besides the read jobs' deps. */
export interface ScheduledJobDeps extends ReadJobDeps {
  /** What the scheduled gates remember between runs. */
  gateState: ScheduledGateState;
  /** For the scheduled snapshots' day threads and run claims. */
  redis: ScheduledSnapshotJobDeps['redis'];
  /** `OPERATION_RETENTION_DAYS`, in ms. */
  retentionMs: number;
  /** `JOB_RETENTION_DAYS`, in ms, and the read-only queue, whose finished jobs the retention sweep removes with the operations queue's. */
  jobRetentionMs: number;
  readQueue: Queue;
}

/** The processors of the scheduled jobs, by queue and job name: gates and summaries read, snapshots and the retention sweep on the operations queue. */
export function createScheduledJobs(deps: ScheduledJobDeps): { read: Record<string, JobProcessor>; ops: Record<string, JobProcessor> } {
  const { inventory, chat, logger, now, gateState: state } = deps;
  return {
    read: {
      [SCHEDULED_GATE_JOB_NAME]: createScheduledGateJob({
        inventory,
        chat,
        logger,
        now,
        state,
        runGate: standardGate(deps.access, deps.timeouts.probeMs),
        runningGates: deps.runningGates,
        onReport: deps.onReport,
        onGateError: deps.onGateError,
      }),
      [GATE_SUMMARY_JOB_NAME]: createGateSummaryJob({ inventory, chat, logger, state }),
    },
    ops: {
      [SCHEDULED_SNAPSHOT_JOB_NAME]: createScheduledSnapshotJob(deps),
      [RETENTION_SWEEP_JOB_NAME]: createRetentionSweepJob({ ...deps, queues: [deps.readQueue, deps.opsQueue] }),
    },
  };
}
