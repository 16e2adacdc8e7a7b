import { z } from 'zod';
import { TerraformPlan, type Operation } from '../../../src/ops/operation.ts';

/** The id of a worker's Node deletion: the replacement's first change, which needs an approval. */
export const WORKER_DELETE_NODE = 'delete-worker-node';

/** An etcd member as the record names it. */
const Member = z.object({ id: z.string(), hostname: z.string() });

/** A node replacement's own fields on its operation (`op.data`). */
export const NodeReplaceData = z.object({
  /** The node's hostname: the VM's `for_each` key, the Kubernetes Node's and the etcd member's name. */
  hostname: z.string(),
  /** The VM's address in the Terraform state, found by its hostname when the replacement was planned. */
  vmAddress: z.string(),
  /** The reviewed `tofu plan -replace`, once the plan step made it (same shape as a Terraform change's, so its apply is shared). */
  terraform: TerraformPlan.optional(),
  /** The member a removal was issued for, written before it is issued: a resumed run that finds it gone knows what went. */
  removing: Member.optional(),
  /** The etcd member the replacement removed (control planes). */
  removedMember: Member.optional(),
  /**
   * The reviewed plan's VM does not set `stop_on_destroy`: its destroy waits for a graceful guest
   * shutdown (up to the provider's 30 min), so the apply is given that much longer.
   */
  gracefulShutdown: z.boolean().optional(),
  /**
   * A retired node: it answered and was Ready when the replacement was planned, so it is drained and
   * reset gracefully first (as `/talos remove` does, after an approver's word), then its VM replaced.
   */
  retired: z.boolean().optional(),
  /** The etcd member the new node joined as (control planes). */
  joinedMember: Member.optional(),
});
export type NodeReplaceData = z.infer<typeof NodeReplaceData>;

/** A replacement's fields, read and checked from the stored operation. */
export function replaceData(op: Pick<Operation, 'data'>): NodeReplaceData {
  return NodeReplaceData.parse(op.data ?? {});
}
