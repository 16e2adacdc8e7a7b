import { chmod, lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';

/** The prefixes of the private directories the bot makes: a job's credentials, and a saved `tofu plan`. */
export const PRIVATE_DIR_PREFIXES = ['talos-chatops-', 'talos-chatops-plan-'] as const;

/** `mkdtemp` appends six characters; only names of exactly that shape are the bot's, never `talos-chatops-e2e-…` or the like. */
const OWN_NAME = /^talos-chatops-(?:plan-)?[A-Za-z0-9]{6}$/;

/** Written first in every private directory: the process that holds it. */
const OWNER_FILE = '.owner';

/** A directory no process of this container can vouch for (older version, another container) is left this long, in ms. */
const UNMARKED_AGE_MS = 24 * 60 * 60 * 1000;

/**
 * Who holds a private directory. A pid alone names a process only inside one container's pid
 * namespace and one life of it: every container's bot is pid 1, and a restarted container reuses
 * the pid. So the owner is the host name (a Kubernetes pod's name, a Docker container's id), the
 * kernel's boot id, the pid, and the time the process started (clock ticks since boot).
 */
export interface DirOwner {
  host: string;
  boot: string | undefined;
  pid: number;
  started: number | undefined;
}

async function bootId(): Promise<string | undefined> {
  return readFile('/proc/sys/kernel/random/boot_id', 'utf8').then(
    (text) => text.trim() || undefined,
    () => undefined,
  );
}

/** Field 22 of `/proc/<pid>/stat`, counted after the command name, which may itself hold spaces and parentheses. */
export async function processStartTicks(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[19]);
  return Number.isSafeInteger(ticks) ? ticks : undefined;
}

/** This process, as recorded in the directories it makes. */
export async function thisOwner(): Promise<DirOwner> {
  return { host: hostname(), boot: await bootId(), pid: process.pid, started: await processStartTicks(process.pid) };
}

function parseOwner(text: string): DirOwner | undefined {
  try {
    const value = JSON.parse(text) as Partial<DirOwner> | null;
    if (typeof value !== 'object' || value === null) return undefined;
    if (typeof value.host !== 'string' || !Number.isSafeInteger(value.pid)) return undefined;
    return {
      host: value.host,
      boot: typeof value.boot === 'string' ? value.boot : undefined,
      pid: value.pid as number,
      started: Number.isSafeInteger(value.started) ? value.started : undefined,
    };
  } catch {
    // A bare pid (an older version) names no container: it is judged by age.
    return undefined;
  }
}

/**
 * Makes a private directory (0700) under `baseDir` (the OS temp dir when unset) and records this
 * process as its owner, so a later start can tell a killed process's leftovers from a live one's.
 */
export async function makePrivateDir(baseDir: string | undefined, prefix: (typeof PRIVATE_DIR_PREFIXES)[number]): Promise<string> {
  const dir = await mkdtemp(join(baseDir ?? tmpdir(), prefix));
  await chmod(dir, 0o700);
  await writeFile(join(dir, OWNER_FILE), JSON.stringify(await thisOwner()), { mode: 0o600 });
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
 * Whether the recorded owner is gone. Only a process of this container (same host name, same
 * boot) can be looked up; one of another container may be alive where this one cannot see it.
 */
async function ownerState(owner: DirOwner, me: DirOwner): Promise<'gone' | 'alive' | 'unknown'> {
  if (owner.host !== me.host) return 'unknown';
  // The machine rebooted since: nothing of that boot runs.
  if (owner.boot !== undefined && me.boot !== undefined && owner.boot !== me.boot) return 'gone';
  if (!alive(owner.pid)) return 'gone';
  const started = await processStartTicks(owner.pid);
  // The pid is taken by another process (a restarted container's pid 1 is this very process).
  if (started !== undefined && owner.started !== undefined) return started === owner.started ? 'alive' : 'gone';
  // No start times to compare: this process's pid at start-up is an earlier life's, the only guess left.
  return owner.pid === me.pid ? 'gone' : 'alive';
}

/**
 * Removes the private directories a killed bot left behind (credentials, saved plans), at start-up:
 * only directories named as the bot names them, owned by this user, whose owner process is gone
 * (judged by host name, boot id, pid and start time, never by the pid alone). A directory of a
 * live process is kept; one of another container, or of an older version, is kept for a day.
 *
 * @returns how many were removed; their contents are never read beyond the owner file
 */
export async function sweepPrivateDirs(baseDir: string | undefined, now = Date.now()): Promise<number> {
  const base = baseDir ?? tmpdir();
  const uid = process.getuid?.();
  const me = await thisOwner();
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
      const owner = await readFile(join(dir, OWNER_FILE), 'utf8').then(parseOwner, () => undefined);
      const verdict = owner === undefined ? 'unknown' : await ownerState(owner, me);
      const abandoned = verdict === 'gone' || (verdict === 'unknown' && now - info.mtimeMs > UNMARKED_AGE_MS);
      if (!abandoned) continue;
      await rm(dir, { recursive: true, force: true });
      removed += 1;
    } catch {
      // Gone meanwhile, or unreadable: not ours to worry about.
    }
  }
  return removed;
}
