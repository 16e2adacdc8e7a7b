import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createProcessRunner } from '../../../src/exec/process-runner.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { createRepoCheckout } from '../../../src/tofu/repo-checkout.ts';
import { createWorkingTreeReader } from '../../../src/tofu/working-tree.ts';

/** git as the tests run it: nothing of the machine's git configuration involved. */
function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: cwd, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
  }).trim();
}

describe("the bot's own copy of a cluster's Terraform repository (terraformRepo)", () => {
  let base: string;
  let remote: string;
  let work: string;
  let cluster: { terraformDir: string; terraformRepo: { url: string; ref: string; path: string } };
  const runner = createProcessRunner({ scrubber: new SecretScrubber() });
  const options = () => ({ bin: 'git', env: { PATH: process.env.PATH ?? '', HOME: base }, timeoutMs: 10_000, privateBase: base });

  /** Commits `main.tf` with this content in the work clone and pushes it to the bare repository's main. */
  const push = (content: string): string => {
    execFileSync('bash', ['-c', `printf '%s' "$1" > terraform/staging/main.tf`, '_', content], { cwd: work });
    git(work, ['add', '-A']);
    git(work, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', content]);
    git(work, ['push', '-q', 'origin', 'HEAD:main']);
    return git(work, ['rev-parse', 'HEAD']);
  };

  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'repo-checkout-test-'));
    remote = join(base, 'infra.git');
    work = join(base, 'work');
    git(base, ['init', '-q', '--bare', '-b', 'main', remote]);
    git(base, ['init', '-q', '-b', 'main', work]);
    git(work, ['remote', 'add', 'origin', remote]);
    await mkdir(join(work, 'terraform', 'staging'), { recursive: true });
    await writeFile(join(work, '.gitignore'), '.terraform/\n');
    cluster = {
      terraformDir: join(base, 'bot', 'staging'),
      terraformRepo: { url: `file://${remote}`, ref: 'main', path: 'terraform/staging' },
    };
  });
  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('fetches the ref into its own copy and checks it out, detached, at the fetched commit, which the working-tree reader reports as clean', async () => {
    const first = push('# one\n');
    const repos = createRepoCheckout(runner, options());

    const fetched = await repos.fetch(cluster);

    expect(fetched).toEqual({ commit: first, dir: join(cluster.terraformDir, 'checkout', 'terraform', 'staging') });
    expect(await readFile(join(fetched.dir, 'main.tf'), 'utf8')).toBe('# one\n');
    const tree = await createWorkingTreeReader(runner, options()).read(fetched.dir);
    expect(tree).toMatchObject({ commit: first, uncommitted: [] });
  });

  it('moves to the newest commit of the ref at each fetch, keeping what git ignores (tofu init) and dropping what is not committed', async () => {
    push('# one\n');
    const repos = createRepoCheckout(runner, options());
    const { dir } = await repos.fetch(cluster);
    await mkdir(join(dir, '.terraform'));
    await writeFile(join(dir, '.terraform', 'terraform.tfstate'), '{}');
    await writeFile(join(dir, 'stray.tf'), 'resource "x" "y" {}\n');
    const second = push('# two\n');

    const fetched = await repos.fetch(cluster);

    expect(fetched.commit).toBe(second);
    expect(await readFile(join(dir, 'main.tf'), 'utf8')).toBe('# two\n');
    expect(existsSync(join(dir, '.terraform', 'terraform.tfstate'))).toBe(true);
    expect(existsSync(join(dir, 'stray.tf'))).toBe(false);
  });

  it('goes back to the planned commit for the apply without fetching, though the ref moved on since the plan', async () => {
    const planned = push('# planned\n');
    const repos = createRepoCheckout(runner, options());
    await repos.fetch(cluster);
    const newer = push('# pushed after the plan\n');
    // Something moved the copy in between (another fetch): the apply must still run the planned commit.
    expect((await repos.fetch(cluster)).commit).toBe(newer);

    const applied = await repos.checkout(cluster, planned);

    expect(applied.commit).toBe(planned);
    expect(await readFile(join(applied.dir, 'main.tf'), 'utf8')).toBe('# planned\n');
    expect((await createWorkingTreeReader(runner, options()).read(applied.dir)).commit).toBe(planned);
  });

  it('refuses to check out a commit it never fetched, and leaves the copy where it was', async () => {
    const fetched = push('# one\n');
    const repos = createRepoCheckout(runner, options());
    await repos.fetch(cluster);

    await expect(repos.checkout(cluster, 'a'.repeat(40))).rejects.toThrow(/no longer holds commit aaaaaaaaaaaa/);
    expect(
      (await createWorkingTreeReader(runner, options()).read(join(cluster.terraformDir, 'checkout', 'terraform', 'staging'))).commit,
    ).toBe(fetched);
  });

  it('never runs a hook of the fetched repository', async () => {
    push('# one\n');
    const marker = join(base, 'hook-ran');
    const repos = createRepoCheckout(runner, options());
    const { dir } = await repos.fetch(cluster);
    const hooks = join(cluster.terraformDir, 'checkout', '.git', 'hooks');
    await writeFile(join(hooks, 'post-checkout'), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    push('# two\n');

    await repos.fetch(cluster);

    expect(existsSync(marker)).toBe(false);
    expect(await readFile(join(dir, 'main.tf'), 'utf8')).toBe('# two\n');
  });

  it('fails naming the ref when the repository has no such ref', async () => {
    push('# one\n');
    const repos = createRepoCheckout(runner, options());

    await expect(repos.fetch({ ...cluster, terraformRepo: { ...cluster.terraformRepo, ref: 'no-such-branch' } })).rejects.toThrow(
      /no-such-branch/,
    );
  });
});
