import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DirOwner, makePrivateDir, processStartTicks, sweepPrivateDirs, thisOwner } from '../../../src/cluster/private-dir.ts';

/** The pid of a process that has ended: a killed bot's. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

/** An owner record as the bot writes it, for a process of this container unless told otherwise. */
async function ownerFile(dir: string, owner: Partial<DirOwner> & { pid: number }): Promise<void> {
  const me = await thisOwner();
  const started = owner.pid === me.pid ? me.started : await processStartTicks(owner.pid);
  await writeFile(join(dir, '.owner'), JSON.stringify({ host: me.host, boot: me.boot, started, ...owner }));
}

describe('private directories', () => {
  let base: string;
  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'private-dir-test-'));
  });
  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('are made 0700 with this process recorded as their owner, by host, boot, pid and start time', async () => {
    // Act
    const dir = await makePrivateDir(base, 'talos-chatops-');

    // Assert
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await readdir(dir)).toEqual(['.owner']);
    const owner = JSON.parse(await readFile(join(dir, '.owner'), 'utf8')) as DirOwner;
    expect(owner).toEqual(await thisOwner());
    expect(owner).toMatchObject({ host: hostname(), pid: process.pid, started: expect.any(Number), boot: expect.any(String) });
    expect(dir).toMatch(/\/talos-chatops-[A-Za-z0-9]{6}$/);
  });

  it('are swept at start-up when their owner died, or its pid now belongs to another process, and kept while their owner lives', async () => {
    // Arrange
    const me = await thisOwner();
    const killed = join(base, 'talos-chatops-Ab12Cd');
    const killedPlan = join(base, 'talos-chatops-plan-Zz9Yy8');
    const earlierLife = join(base, 'talos-chatops-Qq1Ww2');
    const reusedPid = join(base, 'talos-chatops-Tt5Yy6');
    const beforeReboot = join(base, 'talos-chatops-Uu7Ii8');
    const live = join(base, 'talos-chatops-Ee3Rr4');
    const mine = join(base, 'talos-chatops-Oo9Pp0');
    for (const dir of [killed, killedPlan, earlierLife, reusedPid, beforeReboot, live, mine]) await mkdir(dir, { mode: 0o700 });
    await ownerFile(killed, { pid: deadPid() });
    await writeFile(join(killed, 'talosconfig'), 'key: canary');
    await ownerFile(killedPlan, { pid: deadPid() });
    // A restarted container: the same pid 1, started later.
    await ownerFile(earlierLife, { pid: process.pid, started: (me.started ?? 1) - 1 });
    // The test runner's parent is alive, but is not the process that made the directory.
    await ownerFile(reusedPid, { pid: process.ppid, started: ((await processStartTicks(process.ppid)) ?? 1) - 1 });
    await ownerFile(beforeReboot, { pid: process.ppid, boot: 'a-boot-before-this-one' });
    await ownerFile(live, { pid: process.ppid });
    await ownerFile(mine, { pid: process.pid });

    // Act
    const removed = await sweepPrivateDirs(base);

    // Assert
    expect(removed).toBe(5);
    expect((await readdir(base)).sort()).toEqual(['talos-chatops-Ee3Rr4', 'talos-chatops-Oo9Pp0']);
  });

  it("never judges another container's directory by its pid: kept for a day, whatever this container's pids are", async () => {
    // Arrange: another pod on a shared volume, whose pid 1 is also this container's pid
    const otherPod = { host: `${hostname()}-other`, boot: (await thisOwner()).boot, started: 5 };
    const samePid = join(base, 'talos-chatops-Sp1Sp1');
    const deadHere = join(base, 'talos-chatops-Dh2Dh2');
    const stale = join(base, 'talos-chatops-St3St3');
    const legacy = join(base, 'talos-chatops-Lg4Lg4');
    for (const dir of [samePid, deadHere, stale, legacy]) await mkdir(dir, { mode: 0o700 });
    await ownerFile(samePid, { ...otherPod, pid: process.pid });
    await ownerFile(deadHere, { ...otherPod, pid: deadPid() });
    await ownerFile(stale, { ...otherPod, pid: process.pid });
    // An older version's owner file holds a bare pid, which names no container.
    await writeFile(join(legacy, '.owner'), String(process.pid));
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 60 * 60 * 1000);
    await utimes(stale, twoDaysAgo, twoDaysAgo);

    // Act
    const removed = await sweepPrivateDirs(base);

    // Assert
    expect(removed).toBe(1);
    expect((await readdir(base)).sort()).toEqual(['talos-chatops-Dh2Dh2', 'talos-chatops-Lg4Lg4', 'talos-chatops-Sp1Sp1']);
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
