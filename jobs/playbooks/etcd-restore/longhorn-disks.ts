import type { V1Node } from '@kubernetes/client-node';
import type { ClusterSession } from '../../../src/cluster/cluster-session.ts';
import type { ClusterConfig } from '../../../src/config/inventory.ts';
import { ephemeralLonghornDisks, userVolumeDisks, type UserVolumeType } from '../../../src/health/rules/longhorn-disks.ts';
import { findNodeByAddress } from '../../../src/talos/observe.ts';
import { userVolumeTypes } from '../../../src/talos/user-volume-types.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';

/**
 * Why the rehearsal must not reset these control planes: a Longhorn disk the reset would wipe, with
 * every replica on it. The reset wipes EPHEMERAL, mounted at `/var`: Longhorn's default data path,
 * `/var/lib/longhorn/`, lies there. The runbook gives every node a dedicated disk as a Talos user
 * volume at `/var/mnt/longhorn`, which the reset keeps when it is a partition (or a whole disk) of
 * its own; a `directory` user volume, or a `/var/mnt/<name>` folder with no user volume behind it, is
 * on EPHEMERAL too. `undefined` when nothing would be wiped, or Longhorn is not installed.
 */
export async function longhornOnEphemeral(
  session: ClusterSession,
  talosctl: Talosctl,
  cluster: ClusterConfig,
  kubeNodes: V1Node[],
  signal: AbortSignal,
): Promise<string | undefined> {
  const objects = await session.kube.listLonghornNodes(signal);
  if (objects === undefined) return undefined;
  const addressOf = new Map<string, string>();
  for (const address of cluster.controlPlanes) {
    const name = findNodeByAddress(kubeNodes, address)?.metadata?.name;
    if (name !== undefined) addressOf.set(name, address);
  }
  const names = [...addressOf.keys()];
  const asked = [...new Set(userVolumeDisks(objects, names).map((d) => addressOf.get(d.node)!))];
  const volumes = asked.length === 0 ? new Map() : await userVolumeTypes(talosctl, asked, signal, asked);
  const typeOf = (node: string, volume: string): UserVolumeType => {
    const known = volumes.get(addressOf.get(node) ?? '');
    if (known === undefined) return { unread: 'not asked' };
    if (!(known instanceof Map)) return known;
    const type = known.get(volume);
    return type === 'partition' || type === 'disk' || type === 'directory'
      ? type
      : type === undefined
        ? 'absent'
        : { unread: `type ${type}` };
  };
  const disks = ephemeralLonghornDisks(objects, names, typeOf);
  if (disks.length === 0) return undefined;
  const where = disks.map((d) => `${d.node} (${addressOf.get(d.node) ?? '?'}): disk ${d.disk} at ${d.path}, ${d.why}`).join('; ');
  return `Longhorn keeps data where the reset wipes it (EPHEMERAL), so every replica there would be destroyed: ${where}. Nothing was reset. Give each node the runbook's dedicated Longhorn disk (a Talos user volume of its own partition, mounted at /var/mnt/longhorn; runbook, production gates: storage), move Longhorn's disks there, then rehearse again.`;
}
