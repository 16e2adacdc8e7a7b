import type { Inventory } from './inventory.ts';

/** Slack user ids; a user-group id (`S…`) cannot be expanded to its members before Slack is reached. */
const USER_ID = /^[UW]/;

/**
 * Settings the inventory accepts but an operator should know about at start-up: old spellings
 * still read for one release, production without four eyes, people who are both operator and approver of a cluster, and control planes
 * listed as Longhorn nodes (which the node class does not follow).
 */
export function inventoryWarnings(inventory: Inventory): string[] {
  const warnings: string[] = [];
  for (const cluster of inventory.clusters) {
    for (const path of cluster.deprecatedKeys ?? []) {
      warnings.push(
        `Cluster ${cluster.name} spells ${path} the old way: write timeZone, as maintenance windows do. ` +
          'The old spelling is still read in this release and refused in the next.',
      );
    }
    if (cluster.environment === 'production' && !cluster.requireDistinctApprover) {
      warnings.push(
        `Cluster ${cluster.name} is production with requireDistinctApprover: false: approvals may then be given by the requester ` +
          'or the operator who started the operation. Remove the line to restore four eyes.',
      );
    }
    const listedControlPlanes = cluster.longhornNodes.filter((address) => cluster.controlPlanes.includes(address));
    if (listedControlPlanes.length > 0) {
      warnings.push(
        `Cluster ${cluster.name} lists control plane${listedControlPlanes.length === 1 ? '' : 's'} ${listedControlPlanes.join(', ')} in longhornNodes: the runbook gives the Longhorn installer ` +
          `to Longhorn workers only, so the bot upgrades control planes with the default schematic. Remove ${listedControlPlanes.length === 1 ? 'it' : 'them'} from longhornNodes.`,
      );
    }
    const approvers = new Set(cluster.approvers);
    const both = [...new Set(cluster.operators)].filter((id) => USER_ID.test(id) && approvers.has(id));
    if (both.length > 0) {
      const effect = cluster.requireDistinctApprover
        ? 'four eyes is on there, so such a user may approve only what others requested or started'
        : 'four eyes is off there, so such a user can approve their own request';
      warnings.push(
        `${both.join(', ')} ${both.length === 1 ? 'is' : 'are'} both operator and approver of cluster ${cluster.name}: ${effect}.`,
      );
    }
  }
  return warnings;
}
