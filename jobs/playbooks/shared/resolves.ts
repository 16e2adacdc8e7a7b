import type { Disagreement } from '../../../src/cluster/estate.ts';
import type { Operation } from '../../../src/ops/operation.ts';

/**
 * Whether a disagreement is about the operation's own node (by address, or by the name its
 * preflight found): the removal, replacement or rollback of that very node is what settles it, so
 * it is not held by it. A disagreement about any other node still holds it.
 */
export function aboutOwnNode(op: Operation, d: Disagreement): boolean {
  if (d.node.address !== undefined && d.node.address === op.target.node) return true;
  return d.node.name !== undefined && d.node.name === op.target.nodeName;
}
