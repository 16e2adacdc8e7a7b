import { execFile } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RealEtcdCluster } from './etcd-cluster.ts';

const run = promisify(execFile);

/** Real etcd processes (Debian's 3.4.23) on loopback; each test starts its own cluster and tears it down. */
describe('a real etcd cluster for the simulated control planes', () => {
  let etcd: RealEtcdCluster;
  let pids: number[] = [];

  beforeEach(async () => {
    etcd = await RealEtcdCluster.create();
    await etcd.bootstrap(['cp-1', 'cp-2', 'cp-3']);
    pids = etcd.pids();
  });
  afterEach(async () => {
    await etcd.close();
  });

  /** Whether a process of this id still exists. */
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  const memberNamed = async (name: string, via = 'cp-1') => {
    const members = await etcd.members(via);
    if ('error' in members) throw new Error(members.error);
    return members.find((m) => m.name === name);
  };

  it('starts three voting members, each its own process with its own ports', async () => {
    const members = await etcd.members('cp-2');
    expect(
      'error' in members
        ? members.error
        : members.map((m) => [m.name, m.isLearner]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    ).toEqual([
      ['cp-1', false],
      ['cp-2', false],
      ['cp-3', false],
    ]);
    expect(new Set(pids).size).toBe(3);
    expect(new Set(['cp-1', 'cp-2', 'cp-3'].map((n) => etcd.endpoint(n))).size).toBe(3);
  });

  it('adds one learner, refuses a second, and promotes the first once it caught up', async () => {
    await etcd.wipe('cp-3');
    await etcd.waitForLeader('cp-1');
    const old = await memberNamed('cp-3');
    expect(await etcd.removeMember(old!.id)).toBeUndefined();

    // etcd refuses any add until the leader has been connected to its peers for 5 s (HealthInterval);
    // Talos's join loop retries, and so does this.
    const addRefusals = new Set<string>();
    let added = await etcd.addLearner('cp-3');
    for (let i = 0; i < 200 && 'error' in added; i++) {
      addRefusals.add(added.error);
      await new Promise((r) => setTimeout(r, 50));
      added = await etcd.addLearner('cp-3');
    }
    expect([...addRefusals].filter((e) => e !== 'etcdserver: unhealthy cluster')).toEqual([]);
    expect('error' in added ? added.error : 'added').toBe('added');
    const id = 'id' in added ? added.id : '';
    const byId = async () => {
      const members = await etcd.members('cp-1');
      if ('error' in members) throw new Error(members.error);
      return members.find((m) => m.id === id);
    };
    expect((await byId())?.isLearner).toBe(true);
    // A learner serves its status but refuses the member list.
    await etcd.waitForLeader('cp-3');
    expect(await etcd.members('cp-3')).toEqual({ error: 'etcdserver: rpc not supported for learner' });

    // Transient refusals (the health interval, a slow machine) are retried, as Talos does; the lasting one is the limit.
    const transient = new Set(['etcdserver: unhealthy cluster', 'context deadline exceeded']);
    let second = await etcd.addLearner('cp-4');
    for (let i = 0; i < 100 && 'error' in second && transient.has(second.error); i++) {
      await new Promise((r) => setTimeout(r, 100));
      second = await etcd.addLearner('cp-4');
    }
    expect('error' in second ? second.error : 'added').toBe('etcdserver: too many learner members in cluster');
    await etcd.stop('cp-4');

    // Promotion is refused until the learner caught up with the leader; Talos retries it.
    const promoteRefusals = new Set<string>();
    let refused = await etcd.promote(id);
    for (let i = 0; i < 100 && refused !== undefined; i++) {
      promoteRefusals.add(refused);
      await new Promise((r) => setTimeout(r, 100));
      refused = await etcd.promote(id);
    }
    expect([...promoteRefusals].filter((e) => e !== 'etcdserver: can only promote a learner member which is in sync with leader')).toEqual(
      [],
    );
    expect(refused).toBeUndefined();
    expect(await byId()).toMatchObject({ name: 'cp-3', isLearner: false });
  });

  it('refuses to remove a healthy member when the rest would lose quorum, and removes the dead one', async () => {
    await etcd.kill('cp-3');
    await etcd.waitForLeader('cp-1');
    const healthy = await memberNamed('cp-2');
    const dead = await memberNamed('cp-3');

    expect(await etcd.removeMember(healthy!.id)).toBe('etcdserver: unhealthy cluster');
    expect(await etcd.removeMember(dead!.id)).toBeUndefined();
    const members = await etcd.members('cp-1');
    expect('error' in members ? members.error : members.map((m) => m.name).sort((a, b) => a.localeCompare(b))).toEqual(['cp-1', 'cp-2']);
  });

  it('elects another leader after the leader is killed, and has none once quorum is lost', async () => {
    const status = await etcd.status('cp-1');
    if ('error' in status) throw new Error(status.error);
    const members = await etcd.members('cp-1');
    if ('error' in members) throw new Error(members.error);
    const leaderName = members.find((m) => m.id === status.leader)!.name;
    const others = ['cp-1', 'cp-2', 'cp-3'].filter((n) => n !== leaderName);

    await etcd.kill(leaderName);
    // The survivors name the dead leader until their election timeout, then elect one of themselves.
    const next = await etcd.waitForLeader(others[0]!);
    expect(next).not.toBe(status.leader);
    expect(members.map((m) => m.id)).toContain(next);

    await etcd.kill(others[1]!);
    // One of three: once its election timeout passes it has no leader, and the list is refused.
    let answer = await etcd.members(others[0]!);
    for (let i = 0; i < 100 && !('error' in answer); i++) {
      await new Promise((r) => setTimeout(r, 50));
      answer = await etcd.members(others[0]!);
    }
    expect(answer).toEqual({ error: 'etcdserver: no leader' });
  });

  it('saves a snapshot with its sha256 trailer, restores it as a cluster of one, and refuses a damaged copy', async () => {
    await run('etcdctl', [`--endpoints=${etcd.endpoint('cp-1')}`, 'put', 'marker', 'before-restore']);
    const path = join(etcd.baseDir, 'db.snapshot');
    expect(await etcd.snapshot('cp-1', path)).toBeUndefined();
    const bytes = await readFile(path);
    expect(bytes.length % 512).toBe(32);

    const damaged = join(etcd.baseDir, 'damaged.snapshot');
    const copy = Buffer.from(bytes);
    // A byte of the trailer: the restore's sha256 check refuses it whatever pages the database has.
    copy[copy.length - 1] = copy[copy.length - 1]! ^ 0xff;
    await writeFile(damaged, copy);
    for (const name of ['cp-1', 'cp-2', 'cp-3']) await etcd.wipe(name);
    const refused = await etcd.restore('cp-1', damaged, false);
    expect('error' in refused ? refused.error : '').toMatch(/^expected sha256 \[.*\], got \[.*\]$/);
    expect(etcd.running('cp-1')).toBe(false);

    const restored = await etcd.restore('cp-1', path, false);
    expect('error' in restored).toBe(false);
    const members = await etcd.members('cp-1');
    expect('error' in members ? members.error : members.map((m) => m.name)).toEqual(['cp-1']);
    const { stdout } = await run('etcdctl', [`--endpoints=${etcd.endpoint('cp-1')}`, 'get', 'marker', '--print-value-only']);
    expect(stdout.trim()).toBe('before-restore');
  });

  it('leaves no process and no directory behind once closed', async () => {
    expect(pids.map(alive)).toEqual([true, true, true]);

    await etcd.close();

    expect(pids.map(alive)).toEqual([false, false, false]);
    await expect(stat(etcd.baseDir)).rejects.toThrow(/ENOENT/);
  });
});
