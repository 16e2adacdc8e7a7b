import { mkdir, stat } from 'node:fs/promises';
import { makePrivateDir } from '../cluster/private-dir.ts';
import { terraformCheckoutDir, terraformWorkDir, type TerraformLocation } from '../config/terraform-repo.ts';
import type { ProcessRunner } from '../exec/process-runner.ts';
import { gitArgs, gitEnv } from './working-tree.ts';

/** The bot's copy of a cluster's Terraform repository, at one commit. */
export interface CheckedOut {
  /** The commit the copy is checked out at (detached). */
  commit: string;
  /** Where tofu runs: the repository's `path` in the copy. */
  dir: string;
}

export interface RepoCheckout {
  /** Fetches the cluster's `terraformRepo.ref` and checks the copy out at the fetched commit: before a plan. */
  fetch(cluster: TerraformLocation, signal?: AbortSignal): Promise<CheckedOut>;
  /**
   * Checks the copy out at a commit it already holds, never fetching: the apply of a plan runs on the
   * planned commit, whatever the ref has moved to since.
   */
  checkout(cluster: TerraformLocation, commit: string, signal?: AbortSignal): Promise<CheckedOut>;
}

const COMMIT = /^[0-9a-f]{40}$/;

/**
 * Keeps one git copy per cluster under its `terraformDir` (`checkout/`), owned by the bot. It runs
 * git hardened as the working-tree reader does (no system or global configuration, no hooks, no
 * fsmonitor, only this copy trusted), never prompts for a password, and never follows submodules.
 * Files git ignores (`.terraform/`, tofu's providers and backend settings) survive a checkout;
 * untracked files are removed, so the copy holds what the commit holds.
 */
export function createRepoCheckout(
  runner: ProcessRunner,
  options: { bin: string; env: Record<string, string>; timeoutMs: number; privateBase?: string },
): RepoCheckout {
  let home: Promise<string> | undefined;
  const git = async (root: string, args: string[], signal?: AbortSignal): Promise<string> => {
    home ??= makePrivateDir(options.privateBase, 'talos-chatops-');
    const env = { ...gitEnv(options.env, await home), GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '/bin/false' };
    const hardened = gitArgs(root, ['-c', 'protocol.ext.allow=never', '-c', 'credential.helper=', ...args]);
    return (await runner.run(options.bin, hardened, { cwd: root, env, timeoutMs: options.timeoutMs, signal })).stdout.trim();
  };
  const moveTo = async (cluster: TerraformLocation, root: string, commit: string, signal?: AbortSignal): Promise<CheckedOut> => {
    await git(root, ['checkout', '-q', '--detach', '--force', commit], signal);
    await git(root, ['clean', '-q', '-f', '-f', '-d'], signal);
    return { commit, dir: terraformWorkDir(cluster) };
  };
  const repoOf = (cluster: TerraformLocation): NonNullable<TerraformLocation['terraformRepo']> => {
    if (cluster.terraformRepo === undefined) throw new Error(`${cluster.terraformDir} is not fetched by the bot: no terraformRepo`);
    return cluster.terraformRepo;
  };
  return {
    async fetch(cluster, signal) {
      const repo = repoOf(cluster);
      const root = terraformCheckoutDir(cluster);
      const present = await stat(`${root}/.git`).then(
        () => true,
        () => false,
      );
      if (!present) {
        await mkdir(root, { recursive: true, mode: 0o700 });
        await git(root, ['-c', 'init.defaultBranch=main', 'init', '-q'], signal);
      }
      await git(root, ['fetch', '-q', '--no-tags', '--no-recurse-submodules', '--force', '--', repo.url, repo.ref], signal);
      const commit = await git(root, ['rev-parse', '--verify', 'FETCH_HEAD^{commit}'], signal);
      if (!COMMIT.test(commit)) throw new Error(`git named no commit for ${repo.ref} of ${repo.url}`);
      return moveTo(cluster, root, commit, signal);
    },
    async checkout(cluster, commit, signal) {
      repoOf(cluster);
      if (!COMMIT.test(commit)) throw new Error(`${commit} is not a full commit id`);
      const root = terraformCheckoutDir(cluster);
      const held = await git(root, ['cat-file', '-t', commit], signal).catch(() => undefined);
      if (held !== 'commit') throw new Error(`the bot's copy of the Terraform repository no longer holds commit ${commit.slice(0, 12)}`);
      return moveTo(cluster, root, commit, signal);
    },
  };
}
