import type { Operation } from '../ops/operation.ts';
import type { Presentation } from './presentation.ts';

/** Node names by address, as the last look at the cluster saw them (`ObservedEstateRecord.nodeNames`). */
export type NodeNames = Readonly<Record<string, string>>;

/**
 * The node an operation is about, by the name people use: the name the preflight resolved, the
 * name the command gave, the name the last look at the cluster saw at that address; its address
 * only when no name is known.
 */
export function operationNodeName(op: Pick<Operation, 'target'>, names?: NodeNames): string | undefined {
  const { node, nodeName, namedAs } = op.target;
  if (node === undefined) return nodeName ?? namedAs?.name;
  return nodeName ?? namedAs?.name ?? names?.[node] ?? node;
}

/**
 * An operation as a person names it, everywhere it is named to one (`/talos status`, the Home, a
 * link's label): "Replacement of talos-prd-cp-2", "Talos upgrade to v1.12.11", "Terraform change".
 * Never the kind's internal name nor a bare address where a name is known.
 */
export function operationTitle(
  op: Pick<Operation, 'target'>,
  presentation: Pick<Presentation, 'name' | 'noun'>,
  names?: NodeNames,
): string {
  const noun = presentation.noun ?? presentation.name;
  const node = operationNodeName(op, names);
  return `${noun}${node === undefined ? '' : ` of ${node}`}${op.target.version === undefined ? '' : ` to ${op.target.version}`}`;
}
