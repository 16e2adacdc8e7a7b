import { mkdir } from 'node:fs/promises';
import type { ClusterConfig } from '../config/inventory.ts';
import type { Logger } from '../log/logger.ts';

/**
 * Creates each cluster's snapshot directory (0700: snapshots hold every secret in etcd) where it is
 * missing, so the doctor and the first snapshot find it and nobody has to `mkdir` in the pod. A
 * directory that exists keeps its mode. A failure (a read-only or missing volume) is logged and left
 * to `/talos doctor` and the snapshot itself to report: it never stops the start.
 */
export async function ensureSnapshotDirs(clusters: readonly Pick<ClusterConfig, 'name' | 'snapshotDir'>[], logger: Logger): Promise<void> {
  for (const dir of new Set(clusters.map((c) => c.snapshotDir))) {
    const names = clusters.filter((c) => c.snapshotDir === dir).map((c) => c.name);
    try {
      const created = await mkdir(dir, { recursive: true, mode: 0o700 });
      if (created !== undefined) logger.info({ clusters: names, dir }, 'created the snapshot directory');
    } catch (error) {
      logger.warn(
        { clusters: names, dir, err: (error as NodeJS.ErrnoException).code ?? String(error) },
        'cannot create the snapshot directory',
      );
    }
  }
}
