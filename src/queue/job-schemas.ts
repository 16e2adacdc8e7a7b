import type { Queue } from 'bullmq';
import { z } from 'zod';

/**
 * Queue names and one zod schema per job. Handlers build job data from these, and the
 * workers' dispatcher parses `job.data` against its job's schema before the processor
 * runs, so a job written by an older or newer replica is checked before it is trusted;
 * processors are typed by job name and read the parsed data. Job data never holds
 * credentials: only names, ids and versions.
 */
export const READ_QUEUE = 'talos-read';

const SlackUser = z.string().regex(/^[UW][A-Z0-9]+$/);
const SlackChannel = z.string().regex(/^[CGD][A-Z0-9]+$/);
const ClusterName = z.string().regex(/^[a-z][a-z0-9-]{0,39}$/);

export const HealthJobData = z.strictObject({
  cluster: ClusterName,
  /** The cluster's own channel: its reports go there, wherever they were asked for. */
  channel: SlackChannel,
  /** The channel the command came from, when it is another cluster's: the requester is told there, privately, where the report is. */
  askedIn: SlackChannel.optional(),
  requestedBy: SlackUser,
  /** ISO time of the slash command. */
  requestedAt: z.string(),
  /** The root message, once posted, so a retried job edits it instead of posting another. */
  rootTs: z.string().optional(),
});
export type HealthJobData = z.infer<typeof HealthJobData>;

/** `/talos gates`: the same request shape as the health gate. */
export const GatesJobData = HealthJobData;
export type GatesJobData = HealthJobData;

/** `/talos plan`: the same request shape as the health gate. */
export const PlanJobData = HealthJobData;
export type PlanJobData = HealthJobData;

export const RecordJobData = z.strictObject({
  opId: z.string().regex(/^op-[a-z0-9]+$/),
  requestedBy: SlackUser,
});
export type RecordJobData = z.infer<typeof RecordJobData>;

/** A cluster's scheduled job (gate, daily summary, snapshot): the schedule's cluster is all it carries. */
export const ScheduledJobData = z.strictObject({
  cluster: ClusterName,
});
export type ScheduledJobData = z.infer<typeof ScheduledJobData>;

/** A job that carries nothing (the reconciler, the retention sweep): whatever a scheduler gives it is ignored. */
export const NoJobData = z.object({});

/** Mutating operations: their state lives in the operation store, the job carries only its id. */
export const OPS_QUEUE = 'talos-ops';

export const OperationJobData = z.strictObject({
  opId: z.string().regex(/^op-[a-z0-9]+$/),
});
export type OperationJobData = z.infer<typeof OperationJobData>;

export const NonceJobData = z.strictObject({
  opId: z.string().regex(/^op-[a-z0-9]+$/),
  nonce: z.string().regex(/^[a-z0-9]+$/),
  by: SlackUser.optional(),
});
export type NonceJobData = z.infer<typeof NonceJobData>;

/** The read-only queue's jobs, each with the schema of its data. */
export const READ_JOB_DATA = {
  health: HealthJobData,
  gates: GatesJobData,
  record: RecordJobData,
  'scheduled-gate': ScheduledJobData,
  'scheduled-gate-summary': ScheduledJobData,
} as const;
export type ReadJobName = keyof typeof READ_JOB_DATA;

/** The operations queue's jobs, each with the schema of its data. */
export const OPS_JOB_DATA = {
  'operation-preflight': OperationJobData,
  'operation-run': OperationJobData,
  'approval-expiry': NonceJobData,
  'approval-reminder': NonceJobData,
  'operation-cancelled': OperationJobData,
  'operation-ended': OperationJobData,
  'plan-expiry': OperationJobData,
  /**
   * Retired: the previous version's `/talos snapshot` job, which a snapshot now replaces with its
   * preflight and run. Its processor ends an operation such a job left behind; nothing queues it.
   */
  snapshot: OperationJobData,
  'scheduled-snapshot': ScheduledJobData,
  'ops-reconcile': NoJobData,
  'retention-sweep': NoJobData,
} as const;
export type OpsJobName = keyof typeof OPS_JOB_DATA;

/** The data a job of `name` carries, on either queue. */
export type JobData<N extends ReadJobName | OpsJobName> = N extends ReadJobName
  ? z.infer<(typeof READ_JOB_DATA)[N]>
  : N extends OpsJobName
    ? z.infer<(typeof OPS_JOB_DATA)[N]>
    : never;

/** The read-only queue, typed by its jobs' names and data. */
export type ReadQueue = Queue<JobData<ReadJobName>, unknown, ReadJobName>;
/** The operations queue, typed by its jobs' names and data. */
export type OpsQueue = Queue<JobData<OpsJobName>, unknown, OpsJobName>;
