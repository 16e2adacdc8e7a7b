import { z } from 'zod';
import type { Operation } from '../../../src/ops/operation.ts';

/** A rollback's own fields on its operation (`op.data`). */
export const NodeRollbackData = z.object({
  /** A rollback requested from a stopped upgrade: that operation and its step. */
  parent: z.object({ op: z.string(), step: z.string() }).optional(),
  /** The Kubernetes Node the rollback cordoned before its drain: uncordoned once the node is back. */
  cordoned: z.string().optional(),
});
export type NodeRollbackData = z.infer<typeof NodeRollbackData>;

/** A rollback's fields, read and checked from the stored operation. */
export function rollbackData(op: Pick<Operation, 'data'>): NodeRollbackData {
  return NodeRollbackData.parse(op.data ?? {});
}
