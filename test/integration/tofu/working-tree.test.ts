import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createProcessRunner } from '../../../src/exec/process-runner.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { createWorkingTreeReader } from '../../../src/tofu/working-tree.ts';

/** A git repository as the tests build it: nothing of the machine's git configuration involved. */
function git(cwd: string, args: string[], env: Record<string, string> = {}): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: cwd, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', ...env },
  });
}

describe('the Terraform working tree, as git reports it to the bot', () => {
  let base: string;
  let repo: string;
  let dir: string;
  let home: string;
  let reader: ReturnType<typeof createWorkingTreeReader>;

  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'working-tree-test-'));
    repo = join(base, 'repo');
    dir = join(repo, 'staging');
    home = join(base, 'home');
    await mkdir(dir, { recursive: true });
    await mkdir(home);
    await writeFile(join(repo, '.gitignore'), '*.tfplan\n.terraform/\n*.auto.tfvars\n');
    await writeFile(join(dir, 'main.tf'), 'terraform {}\n');
    git(repo, ['init', '-q', '-b', 'main']);
    git(repo, ['add', '-A']);
    git(repo, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'init']);
    // The bot's own environment: a HOME that holds the operator's git configuration.
    reader = createWorkingTreeReader(createProcessRunner({ scrubber: new SecretScrubber() }), {
      bin: 'git',
      env: { PATH: process.env.PATH ?? '', HOME: home },
      timeoutMs: 10_000,
      privateBase: base,
    });
  });
  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('names ignored files tofu reads (an ignored *.auto.tfvars), apart from ignored caches and from uncommitted changes', async () => {
    // Arrange
    await writeFile(join(dir, 'secrets.auto.tfvars'), 'token = "x"\n');
    await mkdir(join(dir, '.terraform'));
    await writeFile(join(dir, '.terraform', 'cache.tf'), '');
    await writeFile(join(dir, 'saved.tfplan'), '');

    // Act
    const tree = await reader.read(dir);

    // Assert
    expect(tree.uncommitted).toEqual([]);
    expect(tree.ignoredInputs).toEqual(['staging/secrets.auto.tfvars']);
  });

  it("never runs the checkout's own fsmonitor program or hooks", async () => {
    // Arrange: a repository-local configuration that would run a program on every status
    const marker = join(base, 'ran');
    const program = join(base, 'fsmonitor.sh');
    await writeFile(program, `#!/bin/sh\ntouch '${marker}'\nexit 1\n`);
    await chmod(program, 0o755);
    await mkdir(join(base, 'hooks'));
    git(repo, ['config', 'core.fsmonitor', program]);
    git(repo, ['config', 'core.hooksPath', join(base, 'hooks')]);
    git(repo, ['status', '--porcelain'], { GIT_OPTIONAL_LOCKS: '0' });
    expect(existsSync(marker)).toBe(true);
    await rm(marker);

    // Act
    const tree = await reader.read(dir);

    // Assert
    expect(tree.uncommitted).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it('reads no global git configuration: an excludes file under HOME hides nothing', async () => {
    // Arrange
    await writeFile(join(home, '.gitconfig'), `[core]\n\texcludesFile = ${join(home, 'ignore')}\n`);
    await writeFile(join(home, 'ignore'), 'override.tf\n');
    await writeFile(join(dir, 'override.tf'), 'locals {}\n');

    // Act
    const tree = await reader.read(dir);

    // Assert
    expect(tree.uncommitted).toEqual(['staging/override.tf']);
    expect(tree.ignoredInputs).toEqual([]);
  });

  it.runIf(process.getuid?.() === 0)('reads a checkout owned by another user, trusting that checkout by its path alone', async () => {
    // Arrange
    execFileSync('chown', ['-R', '4321:4321', repo]);

    // Act
    const tree = await reader.read(dir);

    // Assert
    expect(tree.unknownBecause).toBeUndefined();
    expect(tree.uncommitted).toEqual([]);
  });
});
