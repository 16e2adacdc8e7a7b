import { realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, relative, resolve } from 'node:path';

/** A path with its symlinks resolved as far as it exists: a file gone since keeps its name under its resolved folder. */
async function resolved(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : resolve(await resolved(parent), basename(path));
  }
}

/**
 * Why a stored snapshot path must not be restored from: it lies outside the cluster's snapshot folder
 * (symlinks followed), which only a changed store (a tampered Redis) or a changed inventory explains.
 * `undefined` when it is inside.
 */
export async function snapshotPathProblem(path: string, snapshotDir: string): Promise<string | undefined> {
  const [dir, file] = await Promise.all([resolved(resolve(snapshotDir)), resolved(resolve(path))]);
  const inside = relative(dir, file);
  if (inside !== '' && !inside.startsWith('..') && !isAbsolute(inside)) return undefined;
  return `${path} is not inside the cluster's snapshot folder ${snapshotDir}: the bot restores only snapshots it keeps there`;
}
