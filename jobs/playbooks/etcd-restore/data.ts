import { z } from 'zod';
import type { Operation } from '../../../src/ops/operation.ts';

/** A control plane's reset as the bot asked for it: recorded before the request, so a resumed run observes rather than asks again. */
const ResetIssued = z.object({
  issuedAt: z.string(),
  /** The reset step's attempt (its `startedAt`): a Retry is a new attempt, which asks again only a node that shows no reset. */
  attempt: z.string(),
});

/** What the bot saw of the cluster, before the rehearsal or once it is back. */
const ClusterFacts = z.object({
  /** etcd members by peer address, voting ones only. */
  members: z.array(z.string()).default([]),
  /** Longhorn volumes attached, which must be attached again once the cluster is back. */
  attachedVolumes: z.array(z.string()).default([]),
});

/** The verification snapshot taken once the cluster is back: the keys after the restore are its `snapshot info`. */
const AfterSnapshot = z.object({ id: z.string(), path: z.string(), revision: z.number(), totalKeys: z.number(), takenAt: z.string() });

/** An etcd restore rehearsal's own fields on the operation (`op.data`). */
export const EtcdRestoreData = z.object({
  before: ClusterFacts.optional(),
  /** The bot's own check of the snapshot file, once it passed. */
  verified: z.object({ at: z.string(), totalKeys: z.number().optional() }).optional(),
  /** Per control plane, the reset asked of it. */
  resets: z.record(z.string(), ResetIssued).default({}),
  /**
   * Per control plane, each reset asked again because its etcd was Failed (etcd's join limit ran out)
   * before the bootstrap: the times, recorded before each request.
   */
  rejoins: z.record(z.string(), z.array(z.string())).default({}),
  /**
   * The one `talosctl bootstrap --recover-from`, recorded with a compare-and-set before it is issued. Set once and never
   * cleared: no crash, Retry or other replica issues it again.
   */
  bootstrap: z.object({ node: z.string(), path: z.string(), issuedAt: z.string(), output: z.string().optional() }).optional(),
  /** When the Kubernetes API first answered again after the recovery: the end of the downtime. */
  apiBackAt: z.string().optional(),
  after: ClusterFacts.extend({ snapshot: AfterSnapshot.optional() }).optional(),
});
export type EtcdRestoreData = z.infer<typeof EtcdRestoreData>;

/** The rehearsal's data as stored; an operation without any reads as a fresh one. */
export function restoreData(op: Pick<Operation, 'data'>): EtcdRestoreData {
  return EtcdRestoreData.parse(op.data ?? {});
}

/** How long the cluster was down: the first reset issued until the Kubernetes API answered again, in seconds. */
export function downtimeSeconds(data: EtcdRestoreData): number | undefined {
  const first = Object.values(data.resets)
    .map((r) => Date.parse(r.issuedAt))
    .sort((a, b) => a - b)[0];
  if (first === undefined || data.apiBackAt === undefined) return undefined;
  return Math.max(0, Math.round((Date.parse(data.apiBackAt) - first) / 1000));
}
