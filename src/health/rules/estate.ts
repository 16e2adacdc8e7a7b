import { describeNode, type Disagreement, type Estate } from '../../cluster/estate.ts';
import type { CheckResult } from '../check-result.ts';

/** One line a person reads: the difference, then what to do. */
export function describeDisagreement(d: Disagreement): string {
  return `${d.text}. To do: ${d.fix}`;
}

/** The health gate's check id of the estate's agreement. */
export const ESTATE_CHECK = 'estate';

/**
 * The gate's check of the estate: failed while any source disagrees with another, each difference
 * named with what to do; a warning when a source could not be read, since nothing was concluded from it.
 */
export function evaluateEstate(estate: Estate): CheckResult {
  const nodes = `${estate.controlPlanes.length} control plane${estate.controlPlanes.length === 1 ? '' : 's'}, ${estate.workers.length} worker${estate.workers.length === 1 ? '' : 's'}`;
  const seen = [
    `control planes: ${estate.controlPlanes.map((a) => describeNode(estate.nodeNames[a], a)).join(', ') || 'none'}`,
    `workers: ${estate.workers.map((a) => describeNode(estate.nodeNames[a], a)).join(', ') || 'none'}`,
  ];
  const unread = estate.unread.map((u) => `not read: ${u}`);
  const base = { id: ESTATE_CHECK, title: 'Nodes by every source (talosconfig, etcd, Kubernetes, Terraform, inventory)' };
  if (estate.disagreements.length > 0) {
    const first = estate.disagreements[0]!;
    const more = estate.disagreements.length - 1;
    return {
      ...base,
      status: 'failed',
      summary: `the sources disagree on the nodes: ${describeDisagreement(first)}${more > 0 ? ` (and ${more} more, in the evidence)` : ''}; until they agree, operations that change the cluster are refused, but the one that settles the difference`,
      evidence: [...estate.disagreements.map(describeDisagreement), ...seen, ...unread],
    };
  }
  if (unread.length > 0) {
    return {
      ...base,
      status: 'warning',
      summary: `${nodes}, but ${estate.unread.length === 1 ? 'one source was' : `${estate.unread.length} sources were`} not read, so they were not compared: ${estate.unread.join('; ')}`,
      evidence: [...seen, ...unread],
    };
  }
  return { ...base, status: 'passed', summary: `every source agrees: ${nodes}`, evidence: seen };
}
