import type { ClusterConfig } from '../../src/config/inventory.ts';
import type { CommandHandler } from './command-context.ts';
import { nodeCommand } from './node-command.ts';

/** Refusals the inventory alone decides: the last node of its kind never goes by removal. */
function lastOfItsKind(cluster: ClusterConfig, node: string): string | undefined {
  if (cluster.controlPlanes.includes(node)) {
    if (cluster.controlPlanes.length > 1) return undefined;
    return `${node} is the only control plane of *${cluster.name}*: removing it leaves no etcd member, which is disaster recovery, not a node removal. Follow the disaster-recovery runbook.`;
  }
  if (cluster.workers.length > 1) return undefined;
  return `${node} is the last worker of *${cluster.name}*. Add a worker first (a new \`talos_nodes\` entry, then apply Terraform), then remove this one.`;
}

export const remove: CommandHandler<'remove'> = (command, slack, deps) =>
  nodeCommand({ node: command.node, cluster: command.cluster, kind: 'node-remove', what: 'a node removal', refuse: lastOfItsKind }, slack, deps);
