import { chmod, lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The prefixes of the private directories the bot makes: a job's credentials, and a saved `tofu plan`. */
export const PRIVATE_DIR_PREFIXES = ['talos-chatops-', 'talos-chatops-plan-'] as const;

/** `mkdtemp` appends six characters; only names of exactly that shape are the bot's, never `talos-chatops-e2e-…` or the like. */
const OWN_NAME = /^talos-chatops-(?:plan-)?[A-Za-z0-9]{6}$/;

/** Written first in every private directory: the process that holds it. */
const OWNER_FILE = '.owner';

/** A directory of an older version (no owner file) is left this long before it counts as abandoned, in ms. */
const UNMARKED_AGE_MS = 24 * 60 * 60 * 1000;

/**
 * Makes a private directory (0700) under `baseDir` (the OS temp dir when unset) and records this
 * process as its owner, so a later start can tell a killed process's leftovers from a live one's.
 */
export async function makePrivateDir(baseDir: string | undefined, prefix: (typeof PRIVATE_DIR_PREFIXES)[number]): Promise<string> {
  const dir = await mkdtemp(join(baseDir ?? tmpdir(), prefix));
  await chmod(dir, 0o700);
  await writeFile(join(dir, OWNER_FILE), String(process.pid), { mode: 0o600 });
  return dir;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's process.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the private directories a killed bot left behind (credentials, saved plans), at start-up:
 * only directories named as the bot names them, owned by this user, whose owner process is gone or
 * is this very process (in a container every start has the same pid, and nothing of this start
 * exists yet). A directory of a live process (another replica on the host) is kept.
 *
 * @returns how many were removed; their contents are never read beyond the owner file
 */
export async function sweepPrivateDirs(baseDir: string | undefined, now = Date.now()): Promise<number> {
  const base = baseDir ?? tmpdir();
  const uid = process.getuid?.();
  let removed = 0;
  let names: string[];
  try {
    names = await readdir(base);
  } catch {
    return 0;
  }
  for (const name of names.filter((n) => OWN_NAME.test(n))) {
    const dir = join(base, name);
    try {
      const info = await lstat(dir);
      if (!info.isDirectory() || (uid !== undefined && info.uid !== uid)) continue;
      const owner = await readFile(join(dir, OWNER_FILE), 'utf8').then(
        (text) => Number.parseInt(text, 10),
        () => undefined,
      );
      const abandoned = owner === undefined ? now - info.mtimeMs > UNMARKED_AGE_MS : owner === process.pid || !alive(owner);
      if (!abandoned) continue;
      await rm(dir, { recursive: true, force: true });
      removed += 1;
    } catch {
      // Gone meanwhile, or unreadable: not ours to worry about.
    }
  }
  return removed;
}
