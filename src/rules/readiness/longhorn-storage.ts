import type { V1Node } from '@kubernetes/client-node';
import { ephemeralLonghornDisks, LonghornNode, type UserVolumeType } from '../../health/rules/longhorn-disks.ts';
import type { CustomObject } from '../../kube/kube-api.ts';
import type { Observed, ReadinessGate } from '../gate-result.ts';

/** Each node's user volumes (`u-<name>` without the prefix) by type, as `talosctl get volumestatus` shows them, or why it was not read. */
export type UserVolumesByNode = Map<string, Map<string, string> | { unread: string }>;

/** The runbook's place for Longhorn's data: a Talos user volume named `longhorn`, mounted at `/var/mnt/longhorn`. */
const RUNBOOK_PATH = '/var/mnt/longhorn';

function volumeType(volumes: UserVolumesByNode, node: string, volume: string): UserVolumeType {
  const known = volumes.get(node);
  if (known === undefined) return { unread: 'not asked' };
  if (!(known instanceof Map)) return known;
  const type = known.get(volume);
  if (type === 'partition' || type === 'disk' || type === 'directory') return type;
  return type === undefined ? 'absent' : { unread: `type ${type}` };
}

/**
 * The runbook's storage gate, from what the estate shows: every Kubernetes node has a Longhorn node
 * (`nodes.longhorn.io`) with at least one disk, and no disk lies where EPHEMERAL is (Longhorn's
 * default `/var/lib/longhorn/`, a `directory` user volume, or a `/var/mnt/<name>` no user volume
 * backs), read against each node's `talosctl get volumestatus`.
 */
export function longhornStorageGate(
  nodes: Observed<V1Node[]>,
  longhornNodes: Observed<CustomObject[] | undefined>,
  volumes: Observed<UserVolumesByNode>,
): ReadinessGate {
  const id = 'longhorn-storage';
  const title = 'Longhorn data disk and user volume on every node';
  const unreadable = (what: string, error: string): ReadinessGate => ({
    id,
    title,
    status: 'failed',
    summary: `could not read ${what}: ${error}`,
    evidence: [error],
  });
  if (!nodes.ok) return unreadable('the Kubernetes nodes', nodes.error);
  if (!longhornNodes.ok) return unreadable("Longhorn's nodes", longhornNodes.error);
  if (!volumes.ok) return unreadable("the nodes' Talos volumes (talosctl get volumestatus)", volumes.error);
  if (longhornNodes.value === undefined)
    return { id, title, status: 'failed', summary: 'Longhorn is not installed (the API serves no nodes.longhorn.io)', evidence: [] };
  const names = nodes.value.map((n) => n.metadata?.name ?? '<unnamed>');
  const disksOf = new Map<string, { disk: string; path: string }[]>();
  for (const object of longhornNodes.value) {
    const parsed = LonghornNode.safeParse(object);
    if (!parsed.success) continue;
    disksOf.set(
      parsed.data.metadata.name,
      Object.entries(parsed.data.spec?.disks ?? {}).map(([disk, spec]) => ({ disk, path: spec.path })),
    );
  }
  const evidence = names.map((name) => {
    const disks = disksOf.get(name);
    const read = volumes.value.get(name);
    const userVolumes =
      read === undefined
        ? 'user volumes not read'
        : read instanceof Map
          ? `user volumes: ${[...read].map(([v, t]) => `u-${v} (${t})`).join(', ') || '<none>'}`
          : `user volumes unread: ${read.unread}`;
    return `${name}  disks: ${disks === undefined ? '<no Longhorn node>' : disks.map((d) => `${d.disk} at ${d.path}`).join(', ') || '<none>'}  ${userVolumes}`;
  });
  const problems: string[] = [];
  for (const name of names) {
    const disks = disksOf.get(name);
    if (disks === undefined) problems.push(`${name} has no Longhorn node (nodes.longhorn.io): Longhorn does not run there`);
    else if (disks.length === 0) problems.push(`${name}'s Longhorn node has no disk`);
  }
  for (const d of ephemeralLonghornDisks(longhornNodes.value, names, (node, volume) => volumeType(volumes.value, node, volume)))
    problems.push(`${d.node}: disk ${d.disk} at ${d.path}, ${d.why}`);
  if (problems.length > 0)
    return {
      id,
      title,
      status: 'failed',
      summary: `${problems.join('; ')}. Give each node a Talos user volume of its own disk or partition (a UserVolumeConfig named longhorn, mounted at ${RUNBOOK_PATH}) and point its Longhorn disk there`,
      evidence,
    };
  return {
    id,
    title,
    status: 'passed',
    summary: `all ${names.length === 1 ? 'one node keeps' : `${names.length} nodes keep`} Longhorn's data on a user volume of its own, off EPHEMERAL`,
    evidence,
  };
}
