import { readFile, realpath, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

/**
 * The commit a Terraform directory is checked out at, read from `.git` directly (no git binary
 * needed); undefined when it is not a checkout. It reads the checkout as it is, like the working
 * tree's status (working-tree.ts), so it sits with the Terraform adapter; operations compare it.
 */
export async function gitHead(dir: string): Promise<string | undefined> {
  const read = (path: string): Promise<string | undefined> =>
    readFile(path, 'utf8').then(
      (t) => t.trim(),
      () => undefined,
    );
  for (let d = dir, i = 0; i < 6; i += 1, d = join(d, '..')) {
    const head = await read(join(d, '.git', 'HEAD'));
    if (head === undefined) continue;
    const ref = /^ref: (.+)$/.exec(head)?.[1];
    if (ref === undefined) return /^[0-9a-f]{40}$/.test(head) ? head : undefined;
    const loose = await read(join(d, '.git', ref));
    if (loose !== undefined) return loose;
    const packed = (await read(join(d, '.git', 'packed-refs'))) ?? '';
    return packed
      .split('\n')
      .find((l) => l.endsWith(` ${ref}`))
      ?.split(' ')[0];
  }
  return undefined;
}

/** The top of the checkout that holds `dir` (where `.git` is), as git names it (symbolic links resolved); undefined when none. */
export async function gitRoot(dir: string): Promise<string | undefined> {
  for (let d = resolve(dir), i = 0; i < 6; i += 1, d = dirname(d)) {
    const found = await stat(join(d, '.git')).then(
      () => true,
      () => false,
    );
    if (found) return realpath(d);
    if (dirname(d) === d) break;
  }
  return undefined;
}
