import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { snapshotPathProblem } from '../../../src/ops/snapshot-path.ts';

let root: string;
let dir: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'snapshot-path-'));
  dir = join(root, 'snapshots');
  await mkdir(dir);
  await writeFile(join(dir, 'staging-1.db'), 'x');
  await writeFile(join(root, 'elsewhere.db'), 'x');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('a stored snapshot path', () => {
  it("passes inside the cluster's snapshot folder, also when the file is gone", async () => {
    expect(await snapshotPathProblem(join(dir, 'staging-1.db'), dir)).toBeUndefined();
    expect(await snapshotPathProblem(join(dir, 'pruned.db'), dir)).toBeUndefined();
  });

  it('is refused outside it: a sibling, a climb out, the folder itself, a symlink that leads out', async () => {
    await symlink(join(root, 'elsewhere.db'), join(dir, 'link.db'));
    const paths = [join(root, 'elsewhere.db'), join(dir, '..', 'elsewhere.db'), dir, join(dir, 'link.db'), '/etc/passwd'];

    const problems = await Promise.all(paths.map((p) => snapshotPathProblem(p, dir)));

    expect(
      problems.map((p) =>
        p?.endsWith(`is not inside the cluster's snapshot folder ${dir}: the bot restores only snapshots it keeps there`),
      ),
    ).toEqual(paths.map(() => true));
  });
});
