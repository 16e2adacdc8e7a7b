import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makePrivateDir, sweepPrivateDirs } from '../../../src/cluster/private-dir.ts';

/** The pid of a process that has ended: a killed bot's. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

describe('private directories', () => {
  let base: string;
  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'private-dir-test-'));
  });
  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('are made 0700 with this process recorded as their owner', async () => {
    // Act
    const dir = await makePrivateDir(base, 'talos-chatops-');

    // Assert
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await readdir(dir)).toEqual(['.owner']);
    expect(dir).toMatch(/\/talos-chatops-[A-Za-z0-9]{6}$/);
  });

  it("are swept at start-up when their owner died, or was this process's pid in an earlier life, and kept while their owner lives", async () => {
    // Arrange
    const killed = join(base, 'talos-chatops-Ab12Cd');
    const killedPlan = join(base, 'talos-chatops-plan-Zz9Yy8');
    const samePid = join(base, 'talos-chatops-Qq1Ww2');
    const live = join(base, 'talos-chatops-Ee3Rr4');
    for (const dir of [killed, killedPlan, samePid, live]) await mkdir(dir, { mode: 0o700 });
    await writeFile(join(killed, '.owner'), String(deadPid()));
    await writeFile(join(killed, 'talosconfig'), 'key: canary');
    await writeFile(join(killedPlan, '.owner'), String(deadPid()));
    await writeFile(join(samePid, '.owner'), String(process.pid));
    // A live process other than this one: the test runner's parent.
    await writeFile(join(live, '.owner'), String(process.ppid));

    // Act
    const removed = await sweepPrivateDirs(base);

    // Assert
    expect(removed).toBe(3);
    expect((await readdir(base)).sort()).toEqual(['talos-chatops-Ee3Rr4']);
  });

  it('never touches directories named otherwise, files, or an unmarked directory younger than a day', async () => {
    // Arrange
    const others = [
      'talos-chatops-e2e-Ab12Cd',
      'talos-chatops-redis-Ab12Cd',
      'talos-chatops-inventory-Ab12Cd',
      'talos-chatops-Ab12Cd7',
      'other-Ab12Cd',
    ];
    for (const name of others) await mkdir(join(base, name));
    await writeFile(join(base, 'talos-chatops-File01'), 'not a directory');
    const fresh = join(base, 'talos-chatops-Fresh1');
    const old = join(base, 'talos-chatops-Old001');
    await mkdir(fresh);
    await mkdir(old);
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 60 * 60 * 1000);
    await utimes(old, twoDaysAgo, twoDaysAgo);

    // Act
    const removed = await sweepPrivateDirs(base);

    // Assert
    expect(removed).toBe(1);
    expect(existsSync(old)).toBe(false);
    expect((await readdir(base)).sort()).toEqual([...others, 'talos-chatops-File01', 'talos-chatops-Fresh1'].sort());
  });
});
