/**
 * The etcd snapshot files the simulator writes, and what etcd's tools find in them.
 *
 * A real snapshot is a bbolt database followed by the sha256 of that database (etcd appends it;
 * etcdutl/snapshot/v3_snapshot.go v3.6.12 `hasChecksum`: `size % 512 == 32`). The simulator writes
 * the same layout: two 4096-byte "meta pages" that carry a small header the simulator can read back
 * (its revision, total keys, page count), random data pages, then the sha256 of all pages. A file the
 * simulator did not write has no such header and is "not a bolt database" to it.
 *
 * Which alteration fails where (reference/etcd-recovery.md):
 * - `snapshot.Status` (etcdutl v3.6.12, run by `talosctl bootstrap --recover-from` on the local file
 *   and again by machined before restoring) opens the file with bbolt v1.4.3 and walks its pages:
 *   a missing file fails `stat`; an empty file fails bbolt's init on a read-only handle; no valid
 *   meta page gives `invalid database`; a file shorter than two pages gives `file size too small N`;
 *   a file cut inside its data pages makes bbolt read past the end of the mmap: the process dies of
 *   SIGBUS (etcd-io/etcd#16222 and the like). bbolt checksums only its meta pages, so a changed byte
 *   in a data page passes Status (with another hash), and so does a changed or missing trailer.
 * - the restore's `copyAndVerifyDB` (v3_snapshot.go v3.6.12) then catches those: no trailer
 *   (`size % 512 != 32`) gives `snapshot missing hash but --skip-hash-check=false`, a trailer that
 *   does not match gives `expected sha256 [..], got [..]` (Go's `%v` of two byte slices).
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';

export const PAGE_SIZE = 4096;
const SHA256_SIZE = 32;
/** Marks the simulator's meta pages; a real bbolt meta page carries its magic 0xED0CDAED instead. */
const MAGIC = 'SIMBOLT1';

export interface SnapshotContent {
  revision: number;
  totalKeys: number;
}

export interface SnapshotStatus extends SnapshotContent {
  /** `%08x` as etcdutl prints it: a hash of the database's content (crc32c upstream, a sha256 prefix here). */
  hash: string;
  /** `tx.Size()`: the database's pages, without the trailer. */
  totalSize: number;
}

/** Status failed: `crash` is a Go runtime fault (exit 2 and a trace), `error` an ordinary error. */
export type StatusFailure = { error: string } | { crash: string };

function metaPage(content: SnapshotContent, pages: number): Buffer {
  const page = Buffer.alloc(PAGE_SIZE);
  page.write(MAGIC, 0, 'latin1');
  page.write(JSON.stringify({ revision: content.revision, totalKeys: content.totalKeys, pages }), 16, 'utf8');
  return page;
}

function readMeta(page: Buffer): (SnapshotContent & { pages: number }) | undefined {
  if (page.length < PAGE_SIZE || page.toString('latin1', 0, MAGIC.length) !== MAGIC) return undefined;
  const end = page.indexOf(0, 16);
  try {
    const meta = JSON.parse(page.toString('utf8', 16, end < 0 ? PAGE_SIZE : end)) as { revision: number; totalKeys: number; pages: number };
    if (![meta.revision, meta.totalKeys, meta.pages].every((n) => Number.isInteger(n) && n >= 0) || meta.pages < 2) return undefined;
    return meta;
  } catch {
    return undefined;
  }
}

/** The bytes of a fresh snapshot: meta pages, `dataPages` random pages, the sha256 trailer. */
export function buildSnapshot(content: SnapshotContent, dataPages: number): Buffer {
  const pages = dataPages + 2;
  const meta = metaPage(content, pages);
  const db = Buffer.concat([meta, meta, randomBytes(dataPages * PAGE_SIZE)]);
  return Buffer.concat([db, createHash('sha256').update(db).digest()]);
}

/** The `%08x` hash etcdutl's Status prints for these database pages. */
function contentHash(db: Buffer): string {
  return createHash('sha256').update(db).digest('hex').slice(0, 8);
}

/** SIGBUS as the Go runtime reports it (the addresses vary from run to run). */
function sigbus(): string {
  const addr = `0x7f${randomBytes(5).toString('hex')}`;
  return (
    `unexpected fault address ${addr}\nfatal error: fault\n` +
    `[signal SIGBUS: bus error code=0x2 addr=${addr} pc=0x${randomBytes(3).toString('hex')}]\n\n` +
    'goroutine 1 gp=0xc000002380 m=0 mp=0x5a4e3c0 [running]:\n' +
    'runtime.throw({0x3e1c2a4?, 0x0?})\n' +
    'go.etcd.io/bbolt.(*Tx).recursivelyCheckPageKeyOrder(...)\n' +
    'go.etcd.io/etcd/etcdutl/v3/snapshot.(*v3Manager).Status.func1(0xc000b0e000)\n'
  );
}

/** etcdutl `snapshot.Status(path)` on a file (v3_snapshot.go v3.6.12 over bbolt v1.4.3 `Open`). */
export async function snapshotStatus(path: string): Promise<SnapshotStatus | StatusFailure> {
  try {
    await stat(path);
  } catch {
    return { error: `stat ${path}: no such file or directory` };
  }
  const bytes = await readFile(path);
  return statusOfBytes(bytes, path);
}

export function statusOfBytes(bytes: Buffer, path: string): SnapshotStatus | StatusFailure {
  // An empty file: bbolt initialises new files by writing meta pages, which a read-only handle refuses.
  if (bytes.length === 0) return { error: `write ${path}: bad file descriptor` };
  // getPageSize: meta page 0, then meta page 1; neither valid gives ErrInvalid.
  const meta = readMeta(bytes.subarray(0, PAGE_SIZE)) ?? readMeta(bytes.subarray(PAGE_SIZE, 2 * PAGE_SIZE));
  if (!meta) return { error: 'invalid database' };
  if (bytes.length < 2 * PAGE_SIZE) return { error: `file size too small ${bytes.length}` };
  const dbSize = meta.pages * PAGE_SIZE;
  // tx.Check walks every page up to the high-water mark; past the end of the file the mmap faults.
  if (bytes.length < dbSize) return { crash: sigbus() };
  return { revision: meta.revision, totalKeys: meta.totalKeys, hash: contentHash(bytes.subarray(0, dbSize)), totalSize: dbSize };
}

/** Go's `%v` of a byte slice: `[1 2 3]`. */
function goBytes(bytes: Buffer): string {
  return `[${[...bytes].join(' ')}]`;
}

/**
 * The restore's `copyAndVerifyDB` (v3_snapshot.go v3.6.12): the trailer, when the size says there is
 * one, must be the sha256 of everything before it. Returns the error text, or undefined.
 */
export function restoreHashCheck(bytes: Buffer, skipHashCheck: boolean): string | undefined {
  const hasHash = bytes.length % 512 === SHA256_SIZE;
  if (!hasHash && !skipHashCheck) return 'snapshot missing hash but --skip-hash-check=false';
  if (hasHash && !skipHashCheck) {
    // The expected hash is read from the file's last 32 bytes (Seek(-sha256.Size, io.SeekEnd)).
    const expected = bytes.subarray(bytes.length - SHA256_SIZE);
    const got = createHash('sha256')
      .update(bytes.subarray(0, bytes.length - SHA256_SIZE))
      .digest();
    if (!expected.equals(got)) return `expected sha256 ${goBytes(expected)}, got ${goBytes(got)}`;
  }
  return undefined;
}

/** How a test damages a snapshot file; see the module comment for where each one fails. */
export type SnapshotDamage =
  /** One byte of a data page flipped: Status passes (another hash), the restore's sha256 check fails. */
  | 'flip-body-byte'
  /** One byte of the sha256 trailer flipped: Status passes (same hash), the restore's check fails. */
  | 'flip-trailer'
  /** The 32-byte trailer cut off: Status passes, the restore fails with "snapshot missing hash". */
  | 'strip-trailer'
  /** Cut in the middle of the data pages (an interrupted copy): Status dies of SIGBUS. */
  | 'truncate'
  /** Both meta pages overwritten: Status fails with `invalid database`. */
  | 'clobber-meta'
  /** Replaced by text: `invalid database`. */
  | 'not-bolt'
  /** Emptied: bbolt cannot initialise it read-only. */
  | 'empty';

export function damageBytes(bytes: Buffer, damage: SnapshotDamage): Buffer {
  const out = Buffer.from(bytes);
  switch (damage) {
    case 'flip-body-byte': {
      // In the last data page, well away from the meta pages.
      const at = Math.max(2 * PAGE_SIZE, out.length - SHA256_SIZE - PAGE_SIZE / 2);
      out[at] = (out[at] ?? 0) ^ 0xff;
      return out;
    }
    case 'flip-trailer': {
      const at = out.length - 1;
      out[at] = (out[at] ?? 0) ^ 0xff;
      return out;
    }
    case 'strip-trailer':
      return out.subarray(0, out.length - SHA256_SIZE);
    case 'truncate':
      return out.subarray(0, Math.max(2 * PAGE_SIZE + 512, Math.floor(out.length / 2 / 512) * 512));
    case 'clobber-meta':
      out.fill(0x5a, 0, 2 * PAGE_SIZE);
      return out;
    case 'not-bolt':
      return Buffer.from('this is not an etcd snapshot\n');
    case 'empty':
      return Buffer.alloc(0);
  }
}

/** Rewrites a snapshot file in place with the given damage (tests: the bot's snapshot dir is a plain directory). */
export async function damageSnapshot(path: string, damage: SnapshotDamage): Promise<void> {
  await writeFile(path, damageBytes(await readFile(path), damage));
}
