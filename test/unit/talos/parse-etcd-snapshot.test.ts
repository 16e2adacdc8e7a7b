import { describe, expect, it } from 'vitest';
import { ParseError } from '../../../src/talos/parse-error.ts';
import { parseSnapshotOutput } from '../../../src/talos/parse-etcd-snapshot.ts';

const OUTPUT = `etcd snapshot saved to "db.snapshot" (2015264 bytes)
snapshot info: hash c25fd181, revision 4193, total keys 1287, total size 3035136
`;

describe('parseSnapshotOutput', () => {
  it('reads both lines', () => {
    expect(parseSnapshotOutput(OUTPUT)).toEqual({
      path: 'db.snapshot',
      bytes: 2015264,
      hash: 'c25fd181',
      revision: 4193,
      totalKeys: 1287,
      totalSize: 3035136,
    });
  });

  it('unquotes a path with spaces and escapes', () => {
    const stdout = OUTPUT.replace('"db.snapshot"', '"/var/backups/etcd \\"prod\\"/db.snapshot"');

    expect(parseSnapshotOutput(stdout).path).toBe('/var/backups/etcd "prod"/db.snapshot');
  });

  it('refuses output without the snapshot info line (the file was not verified)', () => {
    expect(() => parseSnapshotOutput(OUTPUT.split('\n')[0] ?? '')).toThrow(
      'cannot parse talosctl etcd snapshot output: no "snapshot info:" line: the snapshot was not verified',
    );
  });

  it('refuses a malformed info line', () => {
    expect(() => parseSnapshotOutput(OUTPUT.replace('revision 4193', 'revision ?'))).toThrow(/snapshot info line is malformed/);
  });

  it.each(['', 'sha256 checksum not found (size 2015000)\n', 'etcd snapshot saved to db.snapshot\n'])(
    'throws a ParseError for %j',
    (stdout) => {
      expect(() => parseSnapshotOutput(stdout)).toThrow(ParseError);
    },
  );
});
