import { peerHost } from '../../../src/talos/etcd-membership.ts';
import type { ClusterSession } from '../../../src/cluster/cluster-session.ts';
import type { ClusterConfig } from '../../../src/config/inventory.ts';
import { LonghornVolume } from '../../../src/health/rules/longhorn.ts';
import { parseEtcdMembers } from '../../../src/talos/parse-etcd-members.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';

/**
 * etcd's voting members by peer address, as the first control plane that answers `etcd members`
 * lists them; empty when none answers. talosctl asks the node's own etcd (QueryLocal,
 * cmd/talosctl/cmd/talos/etcd.go v1.13.9), and a learner refuses the member list ("etcdserver: rpc
 * not supported for learner", etcd-io/etcd v3.6.12), so the list read is a voting member's: a node
 * rejoining as a learner is skipped, and the next control plane asked.
 */
export async function votingMembers(talosctl: Talosctl, cluster: ClusterConfig, signal: AbortSignal): Promise<string[]> {
  for (const node of cluster.controlPlanes) {
    const result = await talosctl.run(['etcd', 'members'], [node], { signal, okExitCodes: [0, 1], endpoints: [node] });
    if (result.stdout.trim() === '') continue;
    const members = parseEtcdMembers(result.stdout).filter((m) => m.learner !== true);
    return [...new Set(members.flatMap((m) => m.peerUrls.map(peerHost)))].sort();
  }
  return [];
}

/** The Longhorn volumes attached now (none where Longhorn is not installed). */
export async function attachedVolumes(session: ClusterSession, signal: AbortSignal): Promise<string[]> {
  const volumes = (await session.kube.listLonghornVolumes(signal)) ?? [];
  return volumes
    .map((v) => LonghornVolume.safeParse(v))
    .filter((v) => v.success && v.data.status?.state === 'attached')
    .map((v) => (v.success ? v.data.metadata.name : ''))
    .sort();
}
