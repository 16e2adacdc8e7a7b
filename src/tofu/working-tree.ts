import { makePrivateDir } from '../cluster/private-dir.ts';
import type { ProcessRunner } from '../exec/process-runner.ts';
import { gitHead, gitRoot } from './git-head.ts';

/** Where a Terraform directory's working tree stands: the commit it is at, and whether anything in it is not committed. */
export interface WorkingTree {
  /** Undefined when the directory is not a git checkout. */
  commit: string | undefined;
  /** Files under the directory that differ from the commit (modified, added, untracked); undefined when git could not tell. */
  uncommitted: string[] | undefined;
  /**
   * Files git ignores that tofu reads all the same (`*.tfvars`, `*.tf`, …): they change a plan
   * with nothing reviewed. Undefined when git could not tell.
   */
  ignoredInputs?: string[];
  /** Why `uncommitted` is unknown. */
  unknownBecause?: string;
}

export interface WorkingTreeReader {
  read(dir: string, signal?: AbortSignal): Promise<WorkingTree>;
}

/** What tofu loads from a directory by itself: configuration files, and variable files (`*.auto.tfvars`, `terraform.tfvars`, or any named with `-var-file`). */
const TOFU_INPUT = /\.(?:tf|tofu|tfvars)(?:\.json)?$/;

/**
 * git as the bot runs it: no system or global configuration (HOME is an empty private directory),
 * and none of what a checkout's own configuration could make git run: an fsmonitor program, hooks.
 * The mounted checkout is often owned by another uid; only its own top is trusted, never every path.
 */
export function gitArgs(root: string, args: string[]): string[] {
  return ['-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null', '-c', `safe.directory=${root}`, ...args];
}

/** git's environment as the bot runs it: no system or global configuration, HOME an empty private directory. */
export function gitEnv(env: Record<string, string>, home: string): Record<string, string> {
  return { ...env, HOME: home, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
}

/** Porcelain v1 paths, `XY path`; ignored entries are `!! path`. */
function porcelainLines(stdout: string): { code: string; path: string }[] {
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => ({ code: l.slice(0, 2), path: l.slice(3).trim() }));
}

/**
 * Reads the commit from `.git` and asks `git status --porcelain --ignored` for uncommitted changes
 * under the directory (only there: staging and production may share one repository). A reviewed
 * change is a commit; a tree with anything else, or with an ignored file tofu reads, can be planned
 * and shown, never applied.
 */
export function createWorkingTreeReader(
  runner: ProcessRunner,
  options: { bin: string; env: Record<string, string>; timeoutMs: number; privateBase?: string },
): WorkingTreeReader {
  let home: Promise<string> | undefined;
  return {
    async read(dir, signal) {
      const commit = await gitHead(dir);
      const root = commit === undefined ? undefined : await gitRoot(dir);
      if (commit === undefined || root === undefined)
        return { commit, uncommitted: undefined, unknownBecause: `${dir} is not a git checkout` };
      try {
        home ??= makePrivateDir(options.privateBase, 'talos-chatops-');
        const env = {
          ...gitEnv(options.env, await home),
          // status would refresh the index otherwise: a read never writes into the checkout.
          GIT_OPTIONAL_LOCKS: '0',
        };
        const status = await runner.run(
          options.bin,
          gitArgs(root, ['status', '--porcelain', '--untracked-files=normal', '--ignored=matching', '--', '.']),
          { cwd: dir, env, timeoutMs: options.timeoutMs, signal },
        );
        const lines = porcelainLines(status.stdout);
        const uncommitted = lines.filter((l) => l.code !== '!!').map((l) => l.path);
        const ignoredInputs = lines.filter((l) => l.code === '!!' && TOFU_INPUT.test(l.path.replace(/"$/, ''))).map((l) => l.path);
        return { commit, uncommitted, ignoredInputs };
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
