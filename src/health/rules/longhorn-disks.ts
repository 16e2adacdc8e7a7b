import { posix } from 'node:path';
import { z } from 'zod';

/** The parts of a Longhorn Node (`nodes.longhorn.io`, v1beta2 `NodeSpec.disks`) the disk rule reads. */
export const LonghornNode = z.object({
  metadata: z.object({ name: z.string() }),
  spec: z.object({ disks: z.record(z.string(), z.object({ path: z.string() })).optional() }).optional(),
});
export type LonghornNode = z.infer<typeof LonghornNode>;

/** Where Talos mounts user volumes, each at `/var/mnt/<name>` (siderolabs/talos pkg/machinery/constants `UserVolumeMountPoint`). */
const USER_VOLUMES = '/var/mnt';

/**
 * Where a path lies as an EPHEMERAL wipe sees it. Talos mounts EPHEMERAL at `/var`; a user volume is
 * mounted at `/var/mnt/<name>`, so a path inside one is on that volume (`user-volume`, with its name)
 * whose own type decides; anything else under `/var` (Longhorn's default `/var/lib/longhorn/`, and
 * `/var/mnt` itself) is on EPHEMERAL; the rest is elsewhere.
 */
export function placeOf(path: string): { on: 'ephemeral' } | { on: 'user-volume'; name: string } | { on: 'elsewhere' } {
  const normal = posix.normalize(path.trim());
  if (normal !== '/var' && !normal.startsWith('/var/')) return { on: 'elsewhere' };
  const name = normal.startsWith(`${USER_VOLUMES}/`) ? (normal.slice(USER_VOLUMES.length + 1).split('/')[0] ?? '') : '';
  return name === '' ? { on: 'ephemeral' } : { on: 'user-volume', name };
}

/** A user volume as `talosctl get volumestatus` reports it on one node: its type, or that it is not there. */
export type UserVolumeType = 'partition' | 'disk' | 'directory' | 'absent' | { unread: string };

/** One Longhorn disk the reset would wipe, or whose place could not be read: the node, the disk, its path and why. */
export interface EphemeralDisk {
  node: string;
  disk: string;
  path: string;
  why: string;
}

/** The disks of the named nodes inside a user volume, to look its type up: node name and volume name. */
export function userVolumeDisks(objects: readonly unknown[], nodeNames: readonly string[]): { node: string; volume: string }[] {
  return disksOf(objects, nodeNames).flatMap(({ node, path }) => {
    const place = placeOf(path);
    return place.on === 'user-volume' ? [{ node, volume: place.name }] : [];
  });
}

function disksOf(objects: readonly unknown[], nodeNames: readonly string[]): { node: string; disk: string; path: string }[] {
  return objects.flatMap((object) => {
    const parsed = LonghornNode.safeParse(object);
    if (!parsed.success || !nodeNames.includes(parsed.data.metadata.name)) return [];
    return Object.entries(parsed.data.spec?.disks ?? {}).map(([disk, spec]) => ({
      node: parsed.data.metadata.name,
      disk,
      path: spec.path,
    }));
  });
}

/**
 * The disks of the named nodes the reset would wipe: on EPHEMERAL by their path, or inside a user
 * volume that is a `directory` (a folder on EPHEMERAL) or that the node does not have (then
 * `/var/mnt/<name>` is a plain folder on EPHEMERAL). A user volume that could not be read counts too:
 * the rehearsal does not wipe what it could not check. In node then disk order.
 */
export function ephemeralLonghornDisks(
  objects: readonly unknown[],
  nodeNames: readonly string[],
  volumeType: (node: string, volume: string) => UserVolumeType = () => 'partition',
): EphemeralDisk[] {
  const found: EphemeralDisk[] = [];
  for (const { node, disk, path } of disksOf(objects, nodeNames)) {
    const place = placeOf(path);
    if (place.on === 'elsewhere') continue;
    if (place.on === 'ephemeral') {
      found.push({ node, disk, path, why: 'on EPHEMERAL' });
      continue;
    }
    const type = volumeType(node, place.name);
    if (type === 'partition' || type === 'disk') continue;
    const why =
      type === 'directory'
        ? `user volume u-${place.name} is a directory on EPHEMERAL`
        : type === 'absent'
          ? `no user volume u-${place.name}: ${USER_VOLUMES}/${place.name} is a folder on EPHEMERAL`
          : `user volume u-${place.name} could not be read (${type.unread})`;
    found.push({ node, disk, path, why });
  }
  return found.sort((a, b) => a.node.localeCompare(b.node) || a.disk.localeCompare(b.disk));
}
