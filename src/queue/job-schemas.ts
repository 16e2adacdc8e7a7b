import { z } from 'zod';

/**
 * Queue names and one zod schema per job. Handlers build job data from these and
 * processors re-parse `job.data`, so a job written by an older or newer replica is
 * checked before it is trusted. Job data never holds credentials: only names, ids
 * and versions.
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

export type ReadJobName = 'health' | 'gates' | 'plan' | 'record';

/** BullMQ job ids may not contain `:`; Slack ids and trigger ids are mapped into a safe alphabet. */
export function jobIdFor(kind: string, ...parts: string[]): string {
  return [kind, ...parts].join('-').replace(/[^A-Za-z0-9_.-]/g, '_');
}

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

export type OpsJobName = 'operation-preflight' | 'operation-run' | 'approval-expiry' | 'approval-reminder' | 'operation-cancelled' | 'snapshot' | 'ops-reconcile';
