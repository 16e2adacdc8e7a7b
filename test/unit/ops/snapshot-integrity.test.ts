import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { snapshotIntegrityProblems } from '../../../src/ops/snapshot-integrity.ts';

/** A file as `etcd snapshot` writes it: whole 512-byte pages, then the sha256 of them. */
function etcdSnapshot(pages = 8): Buffer {
  const body = randomBytes(pages * 512);
  return Buffer.concat([body, createHash('sha256').update(body).digest()]);
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'snapshot-integrity-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function stored(content: Buffer): Promise<{ path: string; bytes: number; sha256: string }> {
  const path = join(dir, 'staging-rev1.db');
  await writeFile(path, content);
  return { path, bytes: content.length, sha256: sha256(content) };
}

describe('snapshotIntegrityProblems', () => {
  it('passes a snapshot as recorded whose trailing hash matches', async () => {
    expect(await snapshotIntegrityProblems(await stored(etcdSnapshot()))).toEqual([]);
  });

  it('refuses a byte flipped after the record was taken: sha256 and the trailing hash both differ', async () => {
    // Arrange
    const content = etcdSnapshot();
    const recorded = await stored(content);
    content[100] = content[100]! ^ 0xff;
    await writeFile(recorded.path, content);

    // Act
    const problems = await snapshotIntegrityProblems(recorded);

    // Assert
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^its sha256 is /);
    expect(problems[1]).toMatch(/^its last 32 bytes are not the sha256 of the rest/);
  });

  it("refuses a file corrupt when it was recorded: only etcd's own hash shows it", async () => {
    const content = etcdSnapshot();
    content[10] = content[10]! ^ 0x01;
    const problems = await snapshotIntegrityProblems(await stored(content));
    expect(problems).toEqual(["its last 32 bytes are not the sha256 of the rest: etcd's own integrity check would refuse it"]);
  });

  it('refuses a truncated file: size, sha256 and no hash at all', async () => {
    const recorded = await stored(etcdSnapshot());
    await truncate(recorded.path, recorded.bytes - 100);
    const problems = await snapshotIntegrityProblems(recorded);
    expect(problems.map((p) => p.split(' ').slice(0, 2).join(' '))).toEqual([`${recorded.path} is`, 'its sha256', 'its size']);
  });

  it('refuses a file that is gone', async () => {
    const recorded = await stored(etcdSnapshot());
    await rm(recorded.path);
    expect(await snapshotIntegrityProblems(recorded)).toEqual([`${recorded.path} is not there any more`]);
  });
});
