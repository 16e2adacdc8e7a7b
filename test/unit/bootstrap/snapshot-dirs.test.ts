import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureSnapshotDirs } from '../../../src/bootstrap/snapshot-dirs.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ level: 'info', destination, scrubber: new SecretScrubber() }) };
}

describe('ensureSnapshotDirs', () => {
  it('creates a missing snapshot directory, parents included, private to the bot (0700), and says so once per directory', async () => {
    // Arrange
    const root = await mkdtemp(join(tmpdir(), 'snapdirs-'));
    dirs.push(root);
    const shared = join(root, 'backups', 'talos-etcd', 'production');
    const { lines, logger } = capture();

    // Act
    await ensureSnapshotDirs(
      [
        { name: 'production', snapshotDir: shared },
        { name: 'production-b', snapshotDir: shared },
      ],
      logger,
    );

    // Assert
    const info = await stat(shared);
    expect(info.isDirectory()).toBe(true);
    expect(info.mode & 0o777).toBe(0o700);
    expect(lines.filter((l) => l.msg === 'created the snapshot directory')).toEqual([
      expect.objectContaining({ dir: shared, clusters: ['production', 'production-b'] }),
    ]);
  });

  it('leaves a directory that exists as it is, and only logs one it cannot create', async () => {
    // Arrange
    const root = await mkdtemp(join(tmpdir(), 'snapdirs-'));
    dirs.push(root);
    const existing = join(root, 'existing');
    await mkdir(existing, { mode: 0o750 });
    await chmod(existing, 0o750);
    // A volume mounted where a file is: no user, root included, can make a directory under it.
    const blocked = join(root, 'not-a-directory');
    await writeFile(blocked, '');
    const { lines, logger } = capture();

    // Act
    await ensureSnapshotDirs(
      [
        { name: 'staging', snapshotDir: existing },
        { name: 'production', snapshotDir: join(blocked, 'production') },
      ],
      logger,
    );

    // Assert
    expect((await stat(existing)).mode & 0o777).toBe(0o750);
    expect(lines.filter((l) => l.msg === 'created the snapshot directory')).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'cannot create the snapshot directory', err: 'ENOTDIR', clusters: ['production'] }),
    );
  });
});
