import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** The bound of the plan space when none is configured: a few plans of a large estate fit, a runaway does not. */
export const DEFAULT_PLAN_SPACE_BYTES = 256 * 1024 * 1024;

/** An operation id as the bot names a plan's directory; anything else in the plan space is not a plan of the bot's. */
const OP_DIR = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** Thrown before a plan is written when the plan space holds its bound already, or after a plan pushed it over. */
export class PlanSpaceFull extends Error {
  readonly usedBytes: number;
  readonly limitBytes: number;

  constructor(usedBytes: number, limitBytes: number, plans: number) {
    super(
      `the plan space is full (${mib(usedBytes)} of ${mib(limitBytes)} MiB, ${plans} kept plan${plans === 1 ? '' : 's'}); nothing was planned. ` +
        'Kept plans are freed when their operations end: apply or cancel the plans waiting, then plan again',
    );
    this.name = 'PlanSpaceFull';
    this.usedBytes = usedBytes;
    this.limitBytes = limitBytes;
  }
}

function mib(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}

/** Bytes held under `dir` (files at any depth) and the number of plan directories directly in `planDir`. */
async function sizeOf(dir: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await sizeOf(path);
    else
      total += await lstat(path).then(
        (s) => s.size,
        () => 0,
      );
  }
  return total;
}

/** What the plan space holds: bytes, and how many plan directories. */
export async function planSpaceUsage(planDir: string): Promise<{ bytes: number; plans: number }> {
  const entries = await readdir(planDir, { withFileTypes: true }).catch(() => []);
  return { bytes: await sizeOf(planDir), plans: entries.filter((e) => e.isDirectory()).length };
}

/**
 * Refuses to write a plan into a plan space that holds `limitBytes` or more. The plan space is its
 * own volume, so a full one fails plans and never the credential writes of a running job.
 */
export async function assertPlanSpace(planDir: string, limitBytes: number): Promise<void> {
  const used = await planSpaceUsage(planDir);
  if (used.bytes >= limitBytes) throw new PlanSpaceFull(used.bytes, limitBytes, used.plans);
}

/**
 * Removes every plan directory whose operation `keep` does not name as live (ended, unknown to
 * Redis, or not an operation id at all). Every replica mounts the same plan space, so whichever
 * replica sweeps holds every file it removes.
 *
 * @returns the names removed
 */
export async function sweepPlanSpace(planDir: string, keep: (opId: string) => Promise<boolean>): Promise<string[]> {
  const entries = await readdir(planDir, { withFileTypes: true }).catch(() => []);
  const removed: string[] = [];
  for (const entry of entries) {
    if (OP_DIR.test(entry.name) && (await keep(entry.name))) continue;
    await rm(join(planDir, entry.name), { recursive: true, force: true });
    removed.push(entry.name);
  }
  return removed;
}
