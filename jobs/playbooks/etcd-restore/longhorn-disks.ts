import type { V1Node } from '@kubernetes/client-node';
import type { ClusterSession } from '../../../src/cluster/cluster-session.ts';
import type { ClusterConfig } from '../../../src/config/inventory.ts';
import { ephemeralLonghornDisks } from '../../../src/health/rules/longhorn-disks.ts';
import { findNodeByAddress } from '../../../src/talos/observe.ts';

/**
 * Why the rehearsal must not reset these control planes: a Longhorn disk on EPHEMERAL, which the reset
 * wipes, with every replica on it. Longhorn's default data path, `/var/lib/longhorn/`, lies there; the
 * runbook gives every node a dedicated disk as a Talos user volume at `/var/mnt/longhorn`, which the
 * reset keeps. `undefined` when no control plane keeps Longhorn data on EPHEMERAL, or Longhorn is not installed.
 */
export async function longhornOnEphemeral(
  session: ClusterSession,
  cluster: ClusterConfig,
  kubeNodes: V1Node[],
  signal: AbortSignal,
): Promise<string | undefined> {
  const objects = await session.kube.listLonghornNodes(signal);
  if (objects === undefined) return undefined;
  const names = new Map<string, string>();
  for (const address of cluster.controlPlanes) {
    const name = findNodeByAddress(kubeNodes, address)?.metadata?.name;
    if (name !== undefined) names.set(name, address);
  }
  const disks = ephemeralLonghornDisks(objects, [...names.keys()]);
  if (disks.length === 0) return undefined;
  const where = disks.map((d) => `${d.node} (${names.get(d.node) ?? '?'}): disk ${d.disk} at ${d.path}`).join('; ');
  return `Longhorn keeps data on EPHEMERAL, which the reset wipes, so every replica there would be destroyed: ${where}. Nothing was reset. Give each node the runbook's dedicated Longhorn disk (a Talos user volume mounted at /var/mnt/longhorn; runbook, production gates: storage), move Longhorn's disks there, then rehearse again.`;
}
