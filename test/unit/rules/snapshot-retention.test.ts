import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pruneSnapshots } from '../../../src/ops/snapshot-pruning.ts';
import { parseSnapshotName, planPruning } from '../../../src/rules/snapshot-retention.ts';

const NOW = new Date('2026-12-01T12:00:00Z');
/** A snapshot name as etcd-snapshot.ts writes it, `days` before NOW. */
const taken = (days: number, rev = 1000 - days, cluster = 'prod'): string =>
  `${cluster}-${new Date(NOW.getTime() - days * 86_400_000)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '')}-rev${rev}.db`;

describe('snapshot retention', () => {
  it('reads only names the snapshot code writes for this cluster', () => {
    expect(parseSnapshotName('prod', 'prod-20261129T235127Z-rev4242.db')).toEqual({
      file: 'prod-20261129T235127Z-rev4242.db',
      takenAt: new Date('2026-11-29T23:51:27Z'),
      revision: 4242,
    });
    for (const other of [
      'prod-eu-20261129T235127Z-rev1.db',
      'prod-20261129T235127Z.db',
      'prod-20261129T235127Z-rev1.db.sha256',
      'prod-20261129T235127Z-rev1.db.part',
      'manual-copy.db',
      'xprod-20261129T235127Z-rev1.db',
    ]) {
      expect(parseSnapshotName('prod', other)).toBeUndefined();
    }
  });

  it('keeps the newest N and prunes the rest, oldest last, saying why', () => {
    const files = [taken(3), taken(0), taken(1), taken(2), 'notes.txt'];

    const plan = planPruning('prod', files, { keepLast: 2 }, NOW);

    expect(plan.kept.map((s) => s.file)).toEqual([taken(0), taken(1)]);
    expect(plan.pruned.map((s) => [s.file, s.reason])).toEqual([
      [taken(2), 'not among the 2 newest'],
      [taken(3), 'not among the 2 newest'],
    ]);
    expect(plan.rule).toBe('keepLast 2');
  });

  it('keeps what either rule keeps, and always the newest even when it is older than keepDays', () => {
    expect(planPruning('prod', [taken(1), taken(5), taken(9)], { keepLast: 1, keepDays: 6 }, NOW).pruned.map((s) => s.file)).toEqual([
      taken(9),
    ]);
    const stale = planPruning('prod', [taken(30), taken(40)], { keepDays: 7 }, NOW);
    expect(stale.kept.map((s) => s.file)).toEqual([taken(30)]);
    expect(stale.pruned).toEqual([expect.objectContaining({ file: taken(40), reason: 'taken more than 7 days ago' })]);
  });
});

describe('pruning a snapshotDir', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('removes each pruned snapshot and its .sha256, and never a file it did not write', async () => {
    // Arrange
    dir = await mkdtemp(join(tmpdir(), 'snapshots-'));
    const ours = [taken(0), taken(1), taken(2), taken(3)];
    const foreign = ['prod-eu-20260101T000000Z-rev1.db', 'operator-copy.db', `${taken(9)}.part`, 'prod-20200101T000000Z-rev1.db.sha256'];
    for (const f of [...ours, ...ours.map((o) => `${o}.sha256`), ...foreign]) await writeFile(join(dir, f), 'x');

    // Act
    const pruning = await pruneSnapshots('prod', dir, { keepLast: 2 }, NOW);

    // Assert
    expect(pruning.pruned.map((p) => p.file)).toEqual([taken(2), taken(3)]);
    expect((await readdir(dir)).sort()).toEqual([taken(0), `${taken(0)}.sha256`, taken(1), `${taken(1)}.sha256`, ...foreign].sort());
  });
});
