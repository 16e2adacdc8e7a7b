import type { Operation, Step } from '../../../src/ops/operation.ts';

/** The label of an etcd snapshot step, whichever playbook takes it. */
export const SNAPSHOT_LABEL = 'etcd snapshot, copied off-cluster';

/** A node step's node with its host: `talos-cp-2 (10.0.30.12, host pve-2)`. */
export function nodeWithHost(step: Step): string {
  const host = step.host ? `, host ${step.host}` : '';
  return `${step.nodeName ? `${step.nodeName} ` : ''}(${step.node ?? '?'}${host})`;
}

/** A node as an approval names it: `talos-cp-2 (10.0.30.12)`. */
export function nodeRef(step: Step): string {
  return `${step.nodeName ? `${step.nodeName} ` : ''}(${step.node ?? '?'})`;
}

/** The node an operation is about, for its title: `10.0.30.12 (talos-cp-2)`. */
export function nodeTitle(op: Operation): string {
  return `${op.target.node ?? '?'}${op.target.nodeName ? ` (${op.target.nodeName})` : ''}`;
}

/** ` · snapshot \`…\``, once the operation took one. */
export const snapshotNote = (op: Operation): string => (op.snapshot ? ` · snapshot \`${op.snapshot.id}\`` : '');
