/**
 * Talos disaster recovery in the simulator (reference/etcd-recovery.md): EPHEMERAL wipe, etcd
 * Preparing, `bootstrap --recover-from`, the cluster coming back.
 */
import { join } from 'node:path';
import { describe } from 'vitest';
import { damageSnapshot } from './etcd-snapshot-file.ts';
import { simTest, tableRows, type SimFixture } from './sim-fixture.ts';
import { stagingShape } from './shapes.ts';

const it = simTest();

const CP = '10.0.20.204';
const WIPE = ['reset', '--graceful=false', '--reboot', '--system-labels-to-wipe=EPHEMERAL'];

async function snapshot(f: SimFixture, cluster: string, node: string, name = 'db.snapshot'): Promise<{ path: string; info: string }> {
  const path = join(f.dir, name);
  const result = await f.talosctl(cluster, ['-n', node, '-e', node, 'etcd', 'snapshot', path]);
  if (result.exitCode !== 0) throw new Error(`snapshot failed: ${result.stderr}`);
  return { path, info: result.stdout.split('\n')[1] ?? '' };
}

async function wipeAndWaitPreparing(f: SimFixture, cluster: string, nodes: string[]): Promise<void> {
  for (const node of nodes) {
    const result = await f.talosctl(cluster, ['-n', node, '-e', node, ...WIPE]);
    if (result.exitCode !== 0) throw new Error(`reset failed: ${result.stderr}`);
  }
  await f.sim.waitFor(
    () => nodes.every((n) => f.sim.node(cluster, n).stage === 'booting' && f.sim.node(cluster, n).etcdWaitingJoin === true),
    5000,
    'etcd Preparing on every wiped control plane',
  );
}

describe.concurrent('reset --system-labels-to-wipe=EPHEMERAL', () => {
  it('reboots the control plane with its configuration and leaves etcd Preparing, waiting for a bootstrap', async ({ f, expect }) => {
    const before = f.sim.node('staging', CP).bootId;

    const result = await f.talosctl('staging', [
      '-n',
      CP,
      '-e',
      CP,
      'reset',
      '--graceful=false',
      '--reboot',
      '--system-labels-to-wipe',
      'EPHEMERAL',
    ]);
    await f.sim.waitFor(() => f.sim.node('staging', CP).etcdWaitingJoin === true, 5000, 'etcd waiting');
    const service = await f.talosctl('staging', ['-n', CP, '-e', CP, 'service', 'etcd']);

    const lines = result.stderr.trimEnd().split('\n');
    expect(result.exitCode).toBe(0);
    expect(lines).toContain(`"${CP}": task: stopAllPods action: START`);
    expect(lines).not.toContain(`"${CP}": task: cordonAndDrainNode action: START`);
    expect(lines).not.toContain(`"${CP}": task: leaveEtcd action: START`);
    expect(lines).toContain(`"${CP}": task: kexecPrepare action: START`);
    expect(lines).toContain(`"${CP}": events check condition met`);
    expect(lines.at(-1)).toBe(`"${CP}": post check passed`);
    expect(f.sim.node('staging', CP).bootId).not.toBe(before);
    expect(f.sim.events.filter((e) => e.kind === 'reset').map((e) => [e.node, e.detail])).toEqual([[CP, 'EPHEMERAL']]);
    const rows = tableRows(service.stdout);
    expect(rows.slice(0, 4)).toEqual([
      ['NODE', CP],
      ['ID', 'etcd'],
      ['STATE', 'Preparing'],
      ['HEALTH', '?'],
    ]);
    expect(rows[4]?.[0]).toBe('EVENTS');
    expect(rows[4]?.[1]).toMatch(/^\[Preparing\]: Running pre state \(.+ ago\)$/);
  });

  it('with every control plane wiped, etcd and the Kubernetes API are down, the workers keep their pods', async ({ f, expect }) => {
    const workerPods = (): string[] =>
      f.sim
        .cluster('staging')
        .kube.pods.filter((p) => p.nodeName === 'talos-stg-w-1')
        .map((p) => p.name)
        .sort();
    const podsBefore = workerPods();

    await wipeAndWaitPreparing(f, 'staging', [CP]);
    const status = await f.talosctl('staging', ['-n', CP, '-e', CP, 'etcd', 'status']);
    const members = await f.talosctl('staging', ['-n', CP, '-e', CP, 'etcd', 'members']);
    const health = await f.talosctl('staging', ['-n', CP, '-e', CP, 'health', '--wait-timeout', '200ms']);
    const nodes = await fetch(`${f.sim.kubeApiUrl('staging')}/api/v1/nodes`, {
      headers: { authorization: `Bearer ${f.sim.cluster('staging').credentials.token}` },
    }).catch((error: unknown) => error);

    const down = 'rpc error: code = Unknown desc = failed to create etcd client: error building etcd client: context deadline exceeded';
    expect(status.exitCode).toBe(1);
    expect(status.stderr).toBe(`error getting status: 1 error occurred:\n\t* ${CP}: ${down}\n\n\n`);
    expect(members.stderr).toBe(`error getting members: 1 error occurred:\n\t* ${CP}: ${down}\n\n\n`);
    expect(health.exitCode).toBe(1);
    expect(health.stderr).toContain(
      `waiting for etcd to be healthy: 1 error occurred:\n\t* ${CP}: service "etcd" not in expected state "Running": current state [Preparing] Running pre state\n`,
    );
    expect(nodes instanceof Error || (nodes as Response).status >= 500).toBe(true);
    expect(workerPods()).toEqual(podsBefore);
  });
});

describe.concurrent('bootstrap --recover-from', () => {
  it('restores a one-control-plane staging from a fresh snapshot: the snapshot revision and keys, the API back, Nodes Ready', async ({
    f,
    expect,
  }) => {
    const { path, info } = await snapshot(f, 'staging', CP);
    f.sim.cluster('staging').etcd.totalKeys += 40;
    await wipeAndWaitPreparing(f, 'staging', [CP]);

    const result = await f.talosctl('staging', ['-n', CP, '-e', CP, 'bootstrap', `--recover-from=${path}`]);
    await f.sim.waitFor(() => f.sim.node('staging', CP).stage === 'running', 5000, 'the control plane back');
    const after = await snapshot(f, 'staging', CP, 'after.snapshot');
    const members = tableRows((await f.talosctl('staging', ['-n', CP, '-e', CP, 'etcd', 'members'])).stdout);
    const health = await f.talosctl('staging', ['-n', CP, '-e', CP, 'health', '--wait-timeout', '5s']);

    const [, hash, revision, keys, size] = /hash (\w+), revision (\d+), total keys (\d+), total size (\d+)/.exec(info) ?? [];
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(
      `recovering from snapshot "${path}": hash ${hash}, revision ${revision}, total keys ${keys}, total size ${size}\n`,
    );
    expect(f.sim.bootstrapCount('staging')).toBe(1);
    expect(f.sim.events.filter((e) => e.kind === 'etcd-restored').map((e) => e.detail)).toEqual([
      `revision ${revision}, total keys ${keys}`,
    ]);
    expect(after.info).toContain(`total keys ${keys},`);
    expect(Number(/revision (\d+)/.exec(after.info)?.[1])).toBeGreaterThanOrEqual(Number(revision));
    expect(members.slice(1).map((r) => [r[2], r[5]])).toEqual([['talos-stg-cp-1', 'false']]);
    expect(health.exitCode).toBe(0);
  });
});
