import { readdir } from 'node:fs/promises';
import { parseSnapshotName } from '../rules/snapshot-retention.ts';

/**
 * When the newest verified snapshot of `cluster` in `dir` was taken, in Unix seconds, or undefined
 * when there is none (or the directory cannot be read). Read from the directory itself, so it
 * holds across restarts and replicas, and a snapshot pruned or deleted by hand no longer counts.
 * A snapshot is verified once its `.sha256` is written beside it, the last thing the bot does
 * after checking its size (see etcd-snapshot.ts).
 */
export async function lastVerifiedSnapshot(cluster: string, dir: string): Promise<number | undefined> {
  const files = await readdir(dir).catch(() => [] as string[]);
  const present = new Set(files);
  let newest: number | undefined;
  for (const file of files) {
    const snapshot = parseSnapshotName(cluster, file);
    if (snapshot === undefined || !present.has(`${file}.sha256`)) continue;
    const seconds = snapshot.takenAt.getTime() / 1000;
    if (newest === undefined || seconds > newest) newest = seconds;
  }
  return newest;
}
