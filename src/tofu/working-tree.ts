import type { ProcessRunner } from '../exec/process-runner.ts';
import { gitHead } from './git-head.ts';

/** Where a Terraform directory's working tree stands: the commit it is at, and whether anything in it is not committed. */
export interface WorkingTree {
  /** Undefined when the directory is not a git checkout. */
  commit: string | undefined;
  /** Files under the directory that differ from the commit (modified, added, untracked); undefined when git could not tell. */
  uncommitted: string[] | undefined;
  /** Why `uncommitted` is unknown. */
  unknownBecause?: string;
}

export interface WorkingTreeReader {
  read(dir: string, signal?: AbortSignal): Promise<WorkingTree>;
}

/**
 * Reads the commit from `.git` and asks `git status --porcelain` for uncommitted changes under
 * the directory (only there: staging and production may share one repository). A reviewed
 * change is a commit; a tree with anything else can be planned and shown, never applied.
 */
export function createWorkingTreeReader(
  runner: ProcessRunner,
  options: { bin: string; env: Record<string, string>; timeoutMs: number },
): WorkingTreeReader {
  return {
    async read(dir, signal) {
      const commit = await gitHead(dir);
      if (commit === undefined) return { commit, uncommitted: undefined, unknownBecause: `${dir} is not a git checkout` };
      try {
        const status = await runner.run(options.bin, ['status', '--porcelain', '--untracked-files=normal', '--', '.'], {
          cwd: dir,
          env: options.env,
          timeoutMs: options.timeoutMs,
          signal,
        });
        const uncommitted = status.stdout
          .split('\n')
          .map((l) => l.slice(3).trim())
          .filter((l) => l !== '');
        return { commit, uncommitted };
      } catch (error) {
        return {
          commit,
          uncommitted: undefined,
          unknownBecause: `git status could not run: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
    },
  };
}
