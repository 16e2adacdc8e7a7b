/**
 * The simulator with `etcd: 'real'`: talosctl's etcd commands, the machines' joins and the recovery
 * driven through real etcd processes, one per control plane.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe } from 'vitest';
import { parseEtcdMembers } from '../../../src/talos/parse-etcd-members.ts';
import { simTest, tableRows, type SimFixture } from '../sim-fixture.ts';
import { productionShape } from '../shapes.ts';
import { realEtcdOf } from './attach.ts';

const run = promisify(execFile);
const it = simTest({ etcd: 'real', clusters: [productionShape()], timing: { stepMs: 20, rebootMs: 200 } });
const CP1 = '10.0.30.11';
const CP2 = '10.0.30.12';
const CP3 = '10.0.30.13';
const WIPE = ['reset', '--graceful=false', '--reboot', '--system-labels-to-wipe=EPHEMERAL'];

const real = (f: SimFixture) => {
  const etcd = realEtcdOf(f.sim.cluster('production'));
  if (!etcd) throw new Error('the production cluster runs no real etcd');
  return etcd;
};

const members = async (f: SimFixture, via = CP1) => {
  const result = await f.talosctl('production', ['-n', via, '-e', via, 'etcd', 'members']);
  if (result.exitCode !== 0) throw new Error(result.stderr);
  return parseEtcdMembers(result.stdout);
};

describe.concurrent('real etcd under the simulated production', () => {
  it('lists the real members with their real ids, and removes a failed one only where etcd allows it', async ({ f, expect }) => {
    const listed = await members(f);
    const cluster = f.sim.cluster('production');
    expect(listed.map((m) => [m.hostname, m.id, m.learner]).sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual(
      cluster.nodes.filter((n) => n.role === 'controlplane').map((n) => [n.hostname, n.etcdMemberId, false]),
    );

    f.sim.failMachine('production', 'talos-prd-cp-2');
    await real(f).waitForLeader('talos-prd-cp-1');
    const cp3 = f.sim.node('production', 'talos-prd-cp-3').etcdMemberId ?? '';
    const cp2 = f.sim.node('production', 'talos-prd-cp-2').etcdMemberId ?? '';
    const healthy = await f.talosctl('production', ['-n', CP1, '-e', CP1, 'etcd', 'remove-member', cp3]);
    const failed = await f.talosctl('production', ['-n', CP1, '-e', CP1, 'etcd', 'remove-member', cp2]);
    const again = await f.talosctl('production', ['-n', CP1, '-e', CP1, 'etcd', 'remove-member', cp2]);

    const decimal = (hex: string): string => BigInt(`0x${hex}`).toString(10);
    expect(healthy.stderr).toBe(
      `rpc error: code = Unknown desc = failed to remove member: failed to remove member ${decimal(cp3)}: etcdserver: unhealthy cluster\n`,
    );
    expect(failed).toMatchObject({ exitCode: 0, stderr: '' });
    expect(again.stderr).toBe(`rpc error: code = NotFound desc = failed to remove member ${decimal(cp2)}: etcdserver: member not found\n`);
    expect((await members(f)).map((m) => m.hostname).sort((a, b) => a.localeCompare(b))).toEqual(['talos-prd-cp-1', 'talos-prd-cp-3']);
    expect(f.sim.events.filter((e) => e.kind === 'etcd-member-removed').map((e) => [e.node, e.detail])).toEqual([[CP2, cp2]]);
  });

  it('a wiped control plane replaces its own member, joins as a learner and is promoted by etcd', async ({ f, expect }) => {
    const before = f.sim.node('production', 'talos-prd-cp-3').etcdMemberId;

    const reset = await f.talosctl('production', ['-n', CP3, '-e', CP1, ...WIPE]);
    await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'etcd-learner-promoted'), 30_000, 'the learner promoted');
    const after = f.sim.node('production', 'talos-prd-cp-3').etcdMemberId;
    const listed = await members(f);
    const status = tableRows((await f.talosctl('production', ['-n', CP3, '-e', CP1, 'etcd', 'status'])).stdout);

    expect(reset.exitCode).toBe(0);
    expect(after).not.toBe(before);
    expect(listed.find((m) => m.hostname === 'talos-prd-cp-3')).toMatchObject({ id: after, learner: false });
    expect(listed.some((m) => m.id === before)).toBe(false);
    expect(status[1]?.[1]).toBe(after);
    expect(f.sim.events.filter((e) => e.kind.startsWith('etcd-learner')).map((e) => [e.kind, e.detail])).toEqual([
      ['etcd-learner-added', after],
      ['etcd-learner-promoted', after],
    ]);
  });
});

// Alone: two restores and two joins in a row, each through etcd's health interval, beside no other cluster's processes.
describe('real etcd under a simulated recovery', () => {
  it('recovers from a snapshot with etcd checking its hash: a damaged copy fails the service, a sound one brings the data back', async ({
    f,
    expect,
  }) => {
    const etcd = real(f);
    await run('etcdctl', [`--endpoints=${etcd.endpoint('talos-prd-cp-1')}`, 'put', 'marker', 'from-before']);
    const path = join(f.dir, 'db.snapshot');
    const saved = await f.talosctl('production', ['-n', CP1, '-e', CP1, 'etcd', 'snapshot', path]);
    const bytes = await readFile(path);
    const damaged = join(f.dir, 'damaged.snapshot');
    const copy = Buffer.from(bytes);
    // The trailer changed: bolt's Status never reads it, the restore's sha256 check does. (A changed
    // page may instead stop bolt itself, depending on which page it lands in.)
    copy[copy.length - 1] = copy[copy.length - 1]! ^ 0xff;
    await writeFile(damaged, copy);

    const resets = await Promise.all([CP1, CP2, CP3].map((n) => f.talosctl('production', ['-n', n, '-e', n, ...WIPE, '--wait=false'])));
    await f.sim.waitFor(
      () => ['talos-prd-cp-1', 'talos-prd-cp-2', 'talos-prd-cp-3'].every((n) => f.sim.node('production', n).etcdWaitingJoin === true),
      30_000,
      'every control plane in the join loop',
    );
    // CRI is up (bootstrap is allowed) from half a boot on.
    const cp1 = f.sim.node('production', 'talos-prd-cp-1');
    await f.sim.waitFor(() => Date.now() - cp1.bootedAt >= f.sim.timing.bootMs, 5000, 'CRI up on cp-1');
    const refused = await f.talosctl('production', ['-n', CP1, '-e', CP1, 'bootstrap', `--recover-from=${damaged}`]);
    expect(refused.stderr).toBe('');
    expect(refused.exitCode).toBe(0);
    await f.sim.waitFor(() => f.sim.node('production', 'talos-prd-cp-1').etcdFailed !== undefined, 30_000, 'the restore failed');
    const failedService = f.sim.node('production', 'talos-prd-cp-1').etcdFailed;

    expect(saved.exitCode).toBe(0);
    expect(bytes.length % 512).toBe(32);
    expect(resets.map((r) => r.exitCode)).toEqual([0, 0, 0]);
    expect(refused.exitCode).toBe(0);
    expect(failedService).toMatch(/^Failed to run pre stage: error recovering from the snapshot: expected sha256 \[.*\], got \[.*\]$/);
    expect(etcd.running('talos-prd-cp-1')).toBe(false);

    // The failed etcd is brought back into the join loop by the reset again, then recovered from the sound copy.
    const again = await f.talosctl('production', ['-n', CP1, '-e', CP1, ...WIPE]);
    await f.sim.waitFor(() => f.sim.node('production', 'talos-prd-cp-1').etcdWaitingJoin === true, 30_000, 'cp-1 in the join loop');
    await f.sim.waitFor(() => Date.now() - cp1.bootedAt >= f.sim.timing.bootMs, 5000, 'CRI up on cp-1 again');
    const recovered = await f.talosctl('production', ['-n', CP1, '-e', CP1, 'bootstrap', `--recover-from=${path}`]);
    await f.sim.waitFor(
      () => f.sim.events.filter((e) => e.kind === 'etcd-learner-promoted').length === 2,
      120_000,
      'both other control planes promoted',
    );
    const listed = await members(f);
    const { stdout } = await run('etcdctl', [`--endpoints=${etcd.endpoint('talos-prd-cp-1')}`, 'get', 'marker', '--print-value-only']);

    expect(again.exitCode).toBe(0);
    expect(recovered).toMatchObject({ exitCode: 0, stderr: '' });
    expect(recovered.stdout).toMatch(
      /^recovering from snapshot ".*db\.snapshot": hash [0-9a-f]{8}, revision \d+, total keys \d+, total size \d+\n$/,
    );
    expect(listed.map((m) => [m.hostname, m.learner]).sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
      ['talos-prd-cp-1', false],
      ['talos-prd-cp-2', false],
      ['talos-prd-cp-3', false],
    ]);
    expect(stdout.trim()).toBe('from-before');
    // etcd admits one learner at a time: the second was added only after the first was promoted.
    const joins = f.sim.events.filter((e) => e.kind === 'etcd-learner-added' || e.kind === 'etcd-learner-promoted').map((e) => e.kind);
    expect(joins).toEqual(['etcd-learner-added', 'etcd-learner-promoted', 'etcd-learner-added', 'etcd-learner-promoted']);
    // Two restores and two joins one after another, each through etcd's 5 s health interval: longer than one minute on a busy machine.
  }, 150_000);
});
