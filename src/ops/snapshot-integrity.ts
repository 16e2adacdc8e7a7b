import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { Snapshot } from './operation.ts';

/** Length of the sha256 `etcdctl snapshot save` (and talosctl, through etcd's maintenance API) appends to a snapshot. */
const HASH_BYTES = 32;

async function sha256Range(path: string, end?: number): Promise<string> {
  const hash = createHash('sha256');
  const options = end === undefined ? {} : { start: 0, end };
  for await (const chunk of createReadStream(path, options)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function trailer(path: string, size: number): Promise<string> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(HASH_BYTES);
    await file.read(buffer, 0, HASH_BYTES, size - HASH_BYTES);
    return buffer.toString('hex');
  } finally {
    await file.close();
  }
}

/**
 * The bot's own check of a snapshot before anything is restored from it: the file is there, its size
 * and sha256 are those recorded when it was taken, and it carries etcd's integrity hash. etcd's
 * restore (`etcdutl snapshot restore`, server/etcdserver/api/snap and etcdutl/snapshot/v3_snapshot.go,
 * etcd-io/etcd v3.5/v3.6) accepts a snapshot only when its size is a multiple of 512 plus 32 and
 * the last 32 bytes are the sha256 of the rest; the same file fails the same way there, after the
 * cluster's etcd is already gone. Returns the problems, none when the file will restore.
 */
export async function snapshotIntegrityProblems(snapshot: Pick<Snapshot, 'path' | 'bytes' | 'sha256'>): Promise<string[]> {
  const size = await stat(snapshot.path).then(
    (s) => s.size,
    () => undefined,
  );
  if (size === undefined) return [`${snapshot.path} is not there any more`];
  const problems: string[] = [];
  if (size !== snapshot.bytes) problems.push(`${snapshot.path} is ${size} bytes, but ${snapshot.bytes} were recorded when it was taken`);
  const sha256 = await sha256Range(snapshot.path);
  if (sha256 !== snapshot.sha256) problems.push(`its sha256 is ${sha256.slice(0, 12)}…, not ${snapshot.sha256.slice(0, 12)}… as recorded`);
  if (size % 512 !== HASH_BYTES) {
    problems.push(`its size ${size} is not a multiple of 512 plus 32, so it carries no etcd integrity hash (truncated?)`);
    return problems;
  }
  const [body, trailing] = await Promise.all([sha256Range(snapshot.path, size - HASH_BYTES - 1), trailer(snapshot.path, size)]);
  if (body !== trailing) problems.push("its last 32 bytes are not the sha256 of the rest: etcd's own integrity check would refuse it");
  return problems;
}
