/** A snapshot file the bot wrote: `<cluster>-<yyyymmddThhmmssZ>-rev<revision>.db`. */
export interface SnapshotFile {
  file: string;
  takenAt: Date;
  revision: number;
}

export interface RetentionRule {
  /** Keep the newest N. */
  keepLast?: number;
  /** Keep those taken within the last N days. */
  keepDays?: number;
}

export interface SnapshotPruning {
  /** The rule as the record states it, e.g. `keepLast 24, keepDays 7`. */
  rule: string;
  /** Newest first. */
  kept: SnapshotFile[];
  /** Oldest last, each with why retention let it go. */
  pruned: (SnapshotFile & { reason: string })[];
}

/** The name the snapshot code writes (see etcd-snapshot.ts); cluster names are lower-case letters, digits and dashes. */
function namePattern(cluster: string): RegExp {
  return new RegExp(`^${cluster.replace(/[^a-z0-9-]/g, '')}-(\\d{4})(\\d{2})(\\d{2})T(\\d{2})(\\d{2})(\\d{2})Z-rev(\\d+)\\.db$`);
}

/** The snapshot `file` names, or undefined for any file the bot did not write for this cluster (another cluster's, a `.part`, an operator's copy). */
export function parseSnapshotName(cluster: string, file: string): SnapshotFile | undefined {
  const m = namePattern(cluster).exec(file);
  if (m === null) return undefined;
  const takenAt = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
  if (Number.isNaN(takenAt.getTime())) return undefined;
  return { file, takenAt, revision: Number(m[7]) };
}

export function describeRule(rule: RetentionRule): string {
  return [rule.keepLast === undefined ? '' : `keepLast ${rule.keepLast}`, rule.keepDays === undefined ? '' : `keepDays ${rule.keepDays}`]
    .filter(Boolean)
    .join(', ');
}

/**
 * Which of the cluster's snapshots retention lets go. A snapshot stays when either rule keeps it
 * (losing a backup is the costly mistake); the newest always stays, whatever the rule says, and
 * files of any other name are never considered.
 */
export function planPruning(cluster: string, files: readonly string[], rule: RetentionRule, now: Date): SnapshotPruning {
  const snapshots = files
    .map((f) => parseSnapshotName(cluster, f))
    .filter((s): s is SnapshotFile => s !== undefined)
    .sort((a, b) => b.takenAt.getTime() - a.takenAt.getTime() || b.revision - a.revision);
  const cutoff = rule.keepDays === undefined ? undefined : now.getTime() - rule.keepDays * 86_400_000;
  const kept: SnapshotFile[] = [];
  const pruned: SnapshotPruning['pruned'] = [];
  for (const [i, snapshot] of snapshots.entries()) {
    const byCount = rule.keepLast !== undefined && i < rule.keepLast;
    const byAge = cutoff !== undefined && snapshot.takenAt.getTime() >= cutoff;
    if (i === 0 || byCount || byAge) {
      kept.push(snapshot);
      continue;
    }
    const reasons = [
      rule.keepLast === undefined ? '' : `not among the ${rule.keepLast} newest`,
      rule.keepDays === undefined ? '' : `taken more than ${rule.keepDays} day${rule.keepDays === 1 ? '' : 's'} ago`,
    ].filter(Boolean);
    pruned.push({ ...snapshot, reason: reasons.join(' and ') });
  }
  return { rule: describeRule(rule), kept, pruned };
}
