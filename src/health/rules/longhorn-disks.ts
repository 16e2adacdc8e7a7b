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
 * Whether a path lies on EPHEMERAL, the partition `talosctl reset --system-labels-to-wipe=EPHEMERAL`
 * wipes. Talos mounts EPHEMERAL at `/var`; a user volume is a mount of its own at `/var/mnt/<name>`
 * (the runbook's dedicated Longhorn disk is `/var/mnt/longhorn`), so a path inside one is kept.
 * `/var/mnt` itself, and everything else under `/var` (Longhorn's default `/var/lib/longhorn/`), is on
 * EPHEMERAL.
 */
export function onEphemeral(path: string): boolean {
  const normal = posix.normalize(path.trim());
  if (normal !== '/var' && !normal.startsWith('/var/')) return false;
  const insideMnt = normal.startsWith(`${USER_VOLUMES}/`) ? normal.slice(USER_VOLUMES.length + 1) : '';
  return insideMnt === '';
}

/** One Longhorn disk on EPHEMERAL: the node (its Kubernetes name), the disk's name and its path. */
export interface EphemeralDisk {
  node: string;
  disk: string;
  path: string;
}

/** The disks of the named nodes whose path is on EPHEMERAL, in node then disk order; unreadable objects are skipped by the caller's count. */
export function ephemeralLonghornDisks(objects: readonly unknown[], nodeNames: readonly string[]): EphemeralDisk[] {
  const found: EphemeralDisk[] = [];
  for (const object of objects) {
    const parsed = LonghornNode.safeParse(object);
    if (!parsed.success || !nodeNames.includes(parsed.data.metadata.name)) continue;
    for (const [disk, spec] of Object.entries(parsed.data.spec?.disks ?? {})) {
      if (onEphemeral(spec.path)) found.push({ node: parsed.data.metadata.name, disk, path: spec.path });
    }
  }
  return found.sort((a, b) => a.node.localeCompare(b.node) || a.disk.localeCompare(b.disk));
}
