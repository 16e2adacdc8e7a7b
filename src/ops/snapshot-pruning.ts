import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { planPruning, type RetentionRule, type SnapshotPruning } from '../rules/snapshot-retention.ts';

/**
 * Applies the cluster's snapshot retention to its snapshotDir: removes each pruned
 * `<cluster>-<time>-rev<revision>.db` and its `.sha256`, nothing else. Returns what was kept and
 * pruned, for the record.
 */
export async function pruneSnapshots(cluster: string, snapshotDir: string, rule: RetentionRule, now: Date): Promise<SnapshotPruning> {
  const files = await readdir(snapshotDir);
  const pruning = planPruning(cluster, files, rule, now);
  for (const snapshot of pruning.pruned) {
    // The checksum first: a run that dies in between leaves the .db, which the next run finds and prunes;
    // the other order could leave a .sha256 that no name pattern ever matches again.
    await rm(join(snapshotDir, `${snapshot.file}.sha256`), { force: true });
    await rm(join(snapshotDir, snapshot.file), { force: true });
  }
  return pruning;
}
