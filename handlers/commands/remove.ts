import type { ClusterConfig } from '../../src/config/inventory.ts';
import type { CommandHandler } from './command-context.ts';
import { nodeCommand } from './node-command.ts';

/**
 * The refusal the inventory alone decides: the only control plane never goes by removal. Whether
 * the workloads keep a node to run on needs the cluster's taints, so the removal's preflight
 * decides that.
 */
function onlyControlPlane(cluster: ClusterConfig, node: string): string | undefined {
  if (!cluster.controlPlanes.includes(node) || cluster.controlPlanes.length > 1) return undefined;
  return `${node} is the only control plane of *${cluster.name}*: removing it leaves no etcd member, which is disaster recovery, not a node removal. Follow the disaster-recovery runbook.`;
}

export const remove: CommandHandler<'remove'> = (command, slack, deps) =>
  nodeCommand(
    { node: command.node, cluster: command.cluster, kind: 'node-remove', what: 'a node removal', refuse: onlyControlPlane },
    slack,
    deps,
  );
