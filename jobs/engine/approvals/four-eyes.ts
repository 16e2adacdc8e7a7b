import type { ClusterConfig } from '../../../src/config/inventory.ts';
import type { Operation } from '../../../src/ops/operation.ts';

/**
 * Four eyes: nobody approves, overrides or lets a window be skipped for an operation they asked
 * for or started. On by default in production (see the inventory).
 */
export function fourEyesRefusal(
  cluster: Pick<ClusterConfig, 'name' | 'requireDistinctApprover'>,
  op: Operation,
  user: string,
  what: string,
): string | undefined {
  if (!cluster.requireDistinctApprover || (user !== op.requestedBy && user !== op.startedBy)) return undefined;
  return `*${cluster.name}* requires four eyes: you requested or started \`${op.id}\`, so another approver must ${what}. Nothing changed.`;
}

/**
 * The approvers an approval request pages: the cluster's approvers (users and user groups), less
 * a user four eyes keeps from approving this operation. A group is paged whole: its members are
 * checked when one clicks.
 */
/**
 * The approvers still able to approve a step that needs several: four eyes hold whatever the cluster says, and
 * nobody approves twice, so the requester, the starter and those who approved already are left out.
 */
export function stillToApprove(cluster: Pick<ClusterConfig, 'approvers'>, op: Operation, given: readonly { by: string }[]): string[] {
  const barred = new Set([op.requestedBy, op.startedBy, ...given.map((g) => g.by)]);
  return approversToPage({ ...cluster, requireDistinctApprover: true }, op).filter((a) => !barred.has(a));
}

export function approversToPage(cluster: Pick<ClusterConfig, 'approvers' | 'requireDistinctApprover'>, op: Operation): string[] {
  const barred = cluster.requireDistinctApprover ? [op.requestedBy, op.startedBy] : [];
  const paged = cluster.approvers.filter((id) => !barred.includes(id));
  return paged.length > 0 ? paged : [...cluster.approvers];
}
