import type { ClusterConfig, Inventory } from '../../../src/config/inventory.ts';
import type { PlaybookCommand } from '../../engine/playbook.ts';

/** The clusters a restore rehearsal may run on, for a refusal: `staging`, or that none is. */
export function stagingClusters(inventory: Pick<Inventory, 'clusters'> | undefined): string {
  const names = (inventory?.clusters ?? []).filter((c) => c.environment === 'staging').map((c) => `*${c.name}*`);
  return names.length === 0 ? 'the inventory has no staging cluster' : `staging clusters: ${names.join(', ')}`;
}

/**
 * Why a restore rehearsal is refused on `cluster`: it destroys etcd on purpose, so only a cluster whose
 * inventory entry says `environment: staging` may have one, whatever else it says.
 */
export function restoreClusterRefusal(cluster: Pick<ClusterConfig, 'name' | 'environment'>, staging?: string): string | undefined {
  if (cluster.environment === 'staging') return undefined;
  return `*${cluster.name}* is ${cluster.environment}: an etcd restore rehearsal destroys etcd on purpose, so it runs only on a cluster whose environment is staging${staging === undefined ? '' : ` (${staging})`}.`;
}

/** `/talos rehearse etcd-restore [cluster]`. */
export const etcdRestoreCommand: PlaybookCommand = {
  name: 'etcd-restore',
  words: ['rehearse', 'etcd-restore'],
  argument: { kind: 'none' },
  help: 'staging only: etcd restore rehearsal from a fresh, verified snapshot (operators, two approvers)',
  group: 'change',
  example: '/talos rehearse etcd-restore staging',
  request: {
    what: 'an etcd restore rehearsal',
    refuseCluster: (cluster, inventory) => restoreClusterRefusal(cluster, stagingClusters(inventory)),
    refuseAtOnce: { lock: true },
    queued: (op, cluster) =>
      `Preflight for an etcd restore rehearsal on *${cluster.name}* is running (\`${op.id}\`); the plan with its Start button, or the refusal, appears in this channel.`,
  },
};
