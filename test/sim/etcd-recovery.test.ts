/**
 * Talos disaster recovery in the simulator (reference/etcd-recovery.md): EPHEMERAL wipe, etcd
 * Preparing, `bootstrap --recover-from`, the cluster coming back.
 */
import { join } from 'node:path';
import { describe } from 'vitest';
import { buildSnapshot, damageBytes, damageSnapshot, restoreHashCheck, snapshotStatus, statusOfBytes } from './etcd-snapshot-file.ts';
import { renderFlux } from './flux-objects.ts';
import { volumeView } from './longhorn.ts';
import { simTest, tableRows, type SimFixture } from './sim-fixture.ts';
import { stagingShape } from './shapes.ts';

const it = simTest();

/** A staging of three control planes (Longhorn on each) and a worker, as a future staging may be. */
const threeCps = simTest({
  // A reboot long enough for resets issued together to all stop etcd before the first node is back, as real ones do.
  timing: { stepMs: 4, rebootMs: 800 },
  clusters: [
    stagingShape({
      nodes: [
        { hostname: 'talos-stg-cp-1', address: '10.0.20.204', role: 'controlplane', host: 'pve5', longhorn: true },
        { hostname: 'talos-stg-cp-2', address: '10.0.20.206', role: 'controlplane', host: 'pve5', longhorn: true },
        { hostname: 'talos-stg-cp-3', address: '10.0.20.207', role: 'controlplane', host: 'pve5', longhorn: true },
        { hostname: 'talos-stg-w-1', address: '10.0.20.205', role: 'worker', host: 'pve5', longhorn: true },
      ],
      endpoints: ['10.0.20.204', '10.0.20.206', '10.0.20.207'],
      longhorn: true,
      schedulingOnControlPlanes: true,
      defaultExtensions: ['siderolabs/iscsi-tools', 'siderolabs/util-linux-tools'],
    }),
  ],
});
const CPS = ['10.0.20.204', '10.0.20.206', '10.0.20.207'];

const CP = '10.0.20.204';
const WIPE = ['reset', '--graceful=false', '--reboot', '--system-labels-to-wipe=EPHEMERAL'];

async function snapshot(f: SimFixture, cluster: string, node: string, name = 'db.snapshot'): Promise<{ path: string; info: string }> {
  const path = join(f.dir, name);
  const result = await f.talosctl(cluster, ['-n', node, '-e', node, 'etcd', 'snapshot', path]);
  if (result.exitCode !== 0) throw new Error(`snapshot failed: ${result.stderr}`);
  return { path, info: result.stdout.split('\n')[1] ?? '' };
}

/**
 * Resets the control planes together, as the recovery needs: one that boots while a quorum of the
 * others still runs rejoins the old cluster as a learner instead of waiting for the bootstrap.
 */
async function wipeAndWaitPreparing(f: SimFixture, cluster: string, nodes: string[]): Promise<void> {
  const results = await Promise.all(nodes.map((node) => f.talosctl(cluster, ['-n', node, '-e', node, ...WIPE, '--wait=false'])));
  for (const result of results) if (result.exitCode !== 0) throw new Error(`reset failed: ${result.stderr}`);
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

describe.concurrent('bootstrap --recover-from on three control planes', () => {
  threeCps(
    'recovers on one, the other two join as learners and are promoted; Kustomizations restamp Ready, in-sync HelmReleases keep it; volumes attach again',
    async ({ f, expect }) => {
      const cluster = f.sim.cluster('staging');
      const beforeFlux = cluster.kube.flux.map((o) => renderFlux(cluster, o, Date.now()));
      const { path } = await snapshot(f, 'staging', CPS[0]!);
      await wipeAndWaitPreparing(f, 'staging', CPS);
      const preparing = await f.talosctl('staging', ['-n', CPS[1]!, '-e', CPS[1]!, 'service', 'etcd']);
      const attachedBefore = cluster.kube.volumes.filter((v) => !v.detached);
      expect(attachedBefore.some((v) => volumeView(cluster, f.sim.state, v, f.sim.timing, Date.now()).state === 'detached')).toBe(true);

      f.sim.timing.fluxReconcileMs = 1000;
      // Rendered by the test process as soon as the controllers restart, however slowly the talosctl process exits.
      const [result, early] = await Promise.all([
        f.talosctl('staging', ['-n', CPS[0]!, '-e', CPS[0]!, 'bootstrap', '--recover-from', path]),
        f.sim
          .waitFor(() => cluster.kube.fluxReconciledAt !== undefined, 5000, 'the controllers restarted')
          .then(() => cluster.kube.flux.map((o) => renderFlux(cluster, o, Date.now()))),
      ]);
      const restoredAt = f.sim.events.find((e) => e.kind === 'etcd-restored')?.at ?? 0;
      await f.sim.waitFor(() => cluster.nodes.every((n) => n.stage === 'running'), 5000, 'every node running');
      await f.sim.waitFor(
        () => f.sim.events.filter((e) => e.kind === 'etcd-learner-promoted').length === 2,
        5000,
        'both learners promoted',
      );
      await f.sim.waitFor(() => Date.now() >= (cluster.kube.fluxReconciledAt ?? 0), 5000, 'Flux reconciled');
      const members = tableRows((await f.talosctl('staging', ['-n', CPS[0]!, '-e', CPS[0]!, 'etcd', 'members'])).stdout);
      const health = await f.talosctl('staging', ['-n', CPS[0]!, '-e', CPS[0]!, 'health', '--wait-timeout', '10s']);
      const late = cluster.kube.flux.map((o) => renderFlux(cluster, o, Date.now()));
      const ready = (obj: ReturnType<typeof renderFlux>): { status: unknown; at: unknown } => {
        const conditions = (obj['status'] as { conditions: { type: string; status: string; lastTransitionTime: string }[] }).conditions;
        const c = conditions.find((x) => x.type === 'Ready');
        return { status: c?.status, at: c?.lastTransitionTime };
      };

      expect(tableRows(preparing.stdout)[2]).toEqual(['STATE', 'Preparing']);
      expect(result.exitCode).toBe(0);
      expect(f.sim.bootstrapCount('staging')).toBe(1);
      expect(
        f.sim.events
          .filter((e) => e.kind === 'etcd-learner-added')
          .map((e) => e.node ?? '')
          .sort((a, b) => a.localeCompare(b)),
      ).toEqual([CPS[1], CPS[2]]);
      // etcd lists members by id (RaftCluster.Members sorts them), so the names are sorted here.
      expect(
        members
          .slice(1)
          .map((r) => [r[2], r[5]])
          .sort((a, b) => a[0]!.localeCompare(b[0]!)),
      ).toEqual([
        ['talos-stg-cp-1', 'false'],
        ['talos-stg-cp-2', 'false'],
        ['talos-stg-cp-3', 'false'],
      ]);
      expect(health.exitCode).toBe(0);
      const kustomizations = (objs: ReturnType<typeof renderFlux>[]) => objs.filter((o) => o['kind'] === 'Kustomization');
      const releases = (objs: ReturnType<typeof renderFlux>[]) => objs.filter((o) => o['kind'] === 'HelmRelease');
      expect(kustomizations(early).map((o) => ready(o).status)).toEqual(kustomizations(late).map(() => 'Unknown'));
      expect(kustomizations(late).map((o) => ready(o).status)).toEqual(kustomizations(late).map(() => 'True'));
      expect(kustomizations(late).every((o) => Date.parse(String(ready(o).at)) >= Math.floor(restoredAt / 1000) * 1000)).toBe(true);
      // helm-controller marks Ready Unknown only before a release action; an in-sync release has none.
      expect(releases(late).length).toBeGreaterThan(0);
      expect(releases(early).map(ready)).toEqual(releases(beforeFlux).map(ready));
      expect(releases(late).map(ready)).toEqual(releases(beforeFlux).map(ready));
      expect(attachedBefore.map((v) => volumeView(cluster, f.sim.state, v, f.sim.timing, Date.now()).state)).toEqual(
        attachedBefore.map(() => 'attached'),
      );
    },
  );

  threeCps(
    'a control plane wiped while the other two run rejoins as a learner instead of waiting for a bootstrap',
    async ({ f, expect }) => {
      const result = await f.talosctl('staging', ['-n', CPS[2]!, '-e', CPS[0]!, ...WIPE]);
      await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'etcd-learner-promoted'), 5000, 'the learner promoted');
      await f.sim.waitFor(() => f.sim.node('staging', CPS[2]!).stage === 'running', 5000, 'its boot finished');
      const again = await f.talosctl('staging', ['-n', CPS[2]!, '-e', CPS[0]!, 'bootstrap']);
      const members = tableRows((await f.talosctl('staging', ['-n', CPS[0]!, '-e', CPS[0]!, 'etcd', 'members'])).stdout);

      expect(result.exitCode).toBe(0);
      expect(
        members
          .slice(1)
          .map((r) => r[2] ?? '')
          .sort((a, b) => a.localeCompare(b)),
      ).toEqual(['talos-stg-cp-1', 'talos-stg-cp-2', 'talos-stg-cp-3']);
      expect(again.stderr).toBe('error executing bootstrap: rpc error: code = AlreadyExists desc = etcd data directory is not empty\n');
      expect(f.sim.events.filter((e) => e.kind === 'etcd-bootstrap').map((e) => [e.detail, e.error])).toEqual([
        ['plain', 'rpc error: code = AlreadyExists desc = etcd data directory is not empty'],
      ]);
    },
  );
});

describe.concurrent('bootstrap refusals', () => {
  it('refuses a node whose etcd runs, and records the refused call', async ({ f, expect }) => {
    const { path } = await snapshot(f, 'staging', CP);

    const result = await f.talosctl('staging', ['-n', CP, '-e', CP, 'bootstrap', `--recover-from=${path}`]);

    expect(result.exitCode).toBe(1);
    expect(result.stdout).toMatch(/^recovering from snapshot /);
    expect(result.stderr).toBe('error executing bootstrap: rpc error: code = AlreadyExists desc = etcd data directory is not empty\n');
    expect(f.sim.bootstrapCount('staging')).toBe(1);
    expect(f.sim.bootstrapCount('staging', { accepted: true })).toBe(0);
  });

  it('refuses while CRI is not up yet after the reboot', async ({ f, expect }) => {
    f.sim.timing.bootMs = 4000;
    await f.talosctl('staging', ['-n', CP, '-e', CP, ...WIPE]);
    await f.sim.waitFor(() => f.sim.node('staging', CP).stage === 'booting', 5000, 'the node booting');

    const result = await f.talosctl('staging', ['-n', CP, '-e', CP, 'bootstrap']);

    expect(result.stderr).toBe('error executing bootstrap: rpc error: code = FailedPrecondition desc = bootstrap is not available yet\n');
    expect(f.sim.bootstrapCount('staging', { accepted: true })).toBe(0);
  });

  it('refuses several nodes before anything else', async ({ f, expect }) => {
    const result = await f.talosctl('staging', ['-n', `${CP},10.0.20.205`, '-e', CP, 'bootstrap']);

    expect(result.stderr).toBe('command "bootstrap" is not supported with multiple nodes\n');
    expect(f.sim.bootstrapCount('staging')).toBe(0);
  });
});

describe.concurrent('damaged snapshots', () => {
  for (const [damage, exitCode, stderr] of [
    ['truncate', 2, /^unexpected fault address 0x[0-9a-f]+\nfatal error: fault\n\[signal SIGBUS: bus error code=0x2 /],
    ['not-bolt', 1, /^invalid database\n$/],
    ['clobber-meta', 1, /^invalid database\n$/],
  ] as const) {
    it(`fails a ${damage} file in the client's Status, before anything reaches the node`, async ({ f, expect }) => {
      const { path } = await snapshot(f, 'staging', CP);
      await wipeAndWaitPreparing(f, 'staging', [CP]);
      await damageSnapshot(path, damage);

      const result = await f.talosctl('staging', ['-n', CP, '-e', CP, 'bootstrap', `--recover-from=${path}`]);

      expect(result.exitCode).toBe(exitCode);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(stderr);
      expect(f.sim.events.filter((e) => e.kind === 'etcd-bootstrap' || e.kind === 'etcd-snapshot-uploaded')).toEqual([]);
    });
  }

  it('accepts a file with a flipped data byte, whose restore then fails the sha256 check and leaves the data directory dirty', async ({
    f,
    expect,
  }) => {
    const { path, info } = await snapshot(f, 'staging', CP);
    await wipeAndWaitPreparing(f, 'staging', [CP]);
    await damageSnapshot(path, 'flip-body-byte');

    const result = await f.talosctl('staging', ['-n', CP, '-e', CP, 'bootstrap', `--recover-from=${path}`]);
    await f.sim.waitFor(() => f.sim.node('staging', CP).etcdFailed !== undefined, 5000, 'etcd failed');
    const service = tableRows((await f.talosctl('staging', ['-n', CP, '-e', CP, 'service', 'etcd'])).stdout);
    const again = await f.talosctl('staging', ['-n', CP, '-e', CP, 'bootstrap', `--recover-from=${path}`]);

    const hashOf = (text: string): string | undefined => /hash (\w+),/.exec(text)?.[1];
    expect(result.exitCode).toBe(0);
    expect(hashOf(result.stdout)).not.toBe(hashOf(info));
    expect(service[2]).toEqual(['STATE', 'Failed']);
    expect(service[4]?.[1]).toMatch(
      /^\[Failed\]: Failed to run pre stage: error recovering from the snapshot: expected sha256 \[[0-9 ]+\], got \[[0-9 ]+\] \(.+ ago\)$/,
    );
    expect(again.stderr).toBe('error executing bootstrap: rpc error: code = AlreadyExists desc = etcd data directory is not empty\n');
    expect(f.sim.bootstrapCount('staging')).toBe(2);
    expect(f.sim.bootstrapCount('staging', { accepted: true })).toBe(1);
    expect(f.sim.events.filter((e) => e.kind === 'etcd-restore-failed')).toHaveLength(1);
    expect(f.sim.node('staging', CP).stage).toBe('booting');
  });

  it('recovers after a failed restore once the node is wiped again and a sound snapshot is given', async ({ f, expect }) => {
    const bad = await snapshot(f, 'staging', CP, 'bad.snapshot');
    const good = await snapshot(f, 'staging', CP, 'good.snapshot');
    await damageSnapshot(bad.path, 'flip-trailer');
    await wipeAndWaitPreparing(f, 'staging', [CP]);
    await f.talosctl('staging', ['-n', CP, '-e', CP, 'bootstrap', `--recover-from=${bad.path}`]);
    await f.sim.waitFor(() => f.sim.node('staging', CP).etcdFailed !== undefined, 5000, 'etcd failed');

    await wipeAndWaitPreparing(f, 'staging', [CP]);
    const result = await f.talosctl('staging', ['-n', CP, '-e', CP, 'bootstrap', `--recover-from=${good.path}`]);
    await f.sim.waitFor(() => f.sim.node('staging', CP).stage === 'running', 5000, 'the control plane back');

    expect(result.exitCode).toBe(0);
    expect(f.sim.bootstrapCount('staging', { accepted: true })).toBe(2);
    expect(f.sim.events.filter((e) => e.kind === 'etcd-restored').map((e) => e.detail)).toEqual([
      /revision \d+, total keys \d+/.exec(good.info)?.[0],
    ]);
  });

  it('fails the restore of a file without its trailer, unless the hash check is skipped', async ({ f, expect }) => {
    const { path } = await snapshot(f, 'staging', CP);
    await wipeAndWaitPreparing(f, 'staging', [CP]);
    await damageSnapshot(path, 'strip-trailer');

    await f.talosctl('staging', ['-n', CP, '-e', CP, 'bootstrap', `--recover-from=${path}`]);
    await f.sim.waitFor(() => f.sim.node('staging', CP).etcdFailed !== undefined, 5000, 'etcd failed');

    expect(f.sim.node('staging', CP).etcdFailed).toBe(
      'Failed to run pre stage: error recovering from the snapshot: snapshot missing hash but --skip-hash-check=false',
    );
  });

  it('damages the next snapshot through the snapshotDamage fault, once', async ({ f, expect }) => {
    f.sim.faults.set('staging', { snapshotDamage: 'flip-body-byte' });

    const damaged = await snapshot(f, 'staging', CP, 'one.snapshot');
    const sound = await snapshot(f, 'staging', CP, 'two.snapshot');

    expect(damaged.info).toMatch(/^snapshot info: /);
    expect(f.sim.faults.get('staging').snapshotDamage).toBeUndefined();
    const { restoreHashCheck } = await import('./etcd-snapshot-file.ts');
    const { readFile } = await import('node:fs/promises');
    expect(restoreHashCheck(await readFile(damaged.path), false)).toMatch(/^expected sha256 /);
    expect(restoreHashCheck(await readFile(sound.path), false)).toBeUndefined();
  });
});

describe.concurrent('etcdutl Status and the restore check on snapshot bytes', () => {
  it('reads what the simulator wrote, and fails the small, empty and missing files as bbolt does', async ({ expect }) => {
    const bytes = buildSnapshot({ revision: 4193, totalKeys: 1287 }, 10);

    const sound = statusOfBytes(bytes, '/x/db');

    expect(sound).toEqual({ revision: 4193, totalKeys: 1287, hash: expect.stringMatching(/^[0-9a-f]{8}$/), totalSize: 12 * 4096 });
    expect(restoreHashCheck(bytes, false)).toBeUndefined();
    expect(statusOfBytes(damageBytes(bytes, 'empty'), '/x/db')).toEqual({ error: 'write /x/db: bad file descriptor' });
    expect(statusOfBytes(bytes.subarray(0, 6000), '/x/db')).toEqual({ error: 'file size too small 6000' });
    expect(await snapshotStatus('/nonexistent/db.snapshot')).toEqual({ error: 'stat /nonexistent/db.snapshot: no such file or directory' });
    expect(restoreHashCheck(damageBytes(bytes, 'strip-trailer'), true)).toBeUndefined();
    expect(restoreHashCheck(damageBytes(bytes, 'flip-trailer'), true)).toBeUndefined();
  });
});

describe.concurrent('a bootstrap beside a running etcd', () => {
  threeCps('is accepted on an empty node and recorded as a split brain', async ({ f, expect }) => {
    await wipeAndWaitPreparing(f, 'staging', [CPS[1]!, CPS[2]!]);

    const result = await f.talosctl('staging', ['-n', CPS[1]!, '-e', CPS[1]!, 'bootstrap']);

    expect(result.exitCode).toBe(0);
    expect(f.sim.events.filter((e) => e.kind === 'etcd-split-brain').map((e) => [e.node, e.detail])).toEqual([[CPS[1], 'talos-stg-cp-1']]);
    expect(f.sim.bootstrapCount('staging', { node: 'talos-stg-cp-2', accepted: true })).toBe(1);
  });
});

describe.concurrent("etcd's join limit and its one learner", () => {
  threeCps(
    'a wiped control plane that found no cluster within the join limit shows etcd Failed until it is reset again',
    async ({ f, expect }) => {
      const limit = f.sim.timing.etcdJoinTimeoutMs;
      f.sim.timing.etcdJoinTimeoutMs = 0;
      const results = await Promise.all(CPS.map((node) => f.talosctl('staging', ['-n', node, '-e', node, ...WIPE, '--wait=false'])));
      await f.sim.waitFor(() => f.sim.events.filter((e) => e.kind === 'etcd-join-timeout').length === 3, 5000, 'every join limit out');
      const failed = await f.talosctl('staging', ['-n', CPS[1]!, '-e', CPS[1]!, 'service', 'etcd']);
      f.sim.timing.etcdJoinTimeoutMs = limit;
      const again = await f.talosctl('staging', ['-n', CPS[1]!, '-e', CPS[1]!, ...WIPE, '--wait=false']);
      await f.sim.waitFor(() => f.sim.node('staging', CPS[1]!).etcdWaitingJoin === true, 5000, 'back in the join loop');
      const preparing = await f.talosctl('staging', ['-n', CPS[1]!, '-e', CPS[1]!, 'service', 'etcd']);

      expect(results.map((r) => r.exitCode)).toEqual([0, 0, 0]);
      expect(tableRows(failed.stdout)[2]).toEqual(['STATE', 'Failed']);
      expect(failed.stdout).toContain(
        'Failed to run pre stage: failed to build initial etcd cluster: failed to build cluster arguments: 1 error(s) occurred:\n\ttimeout',
      );
      // Nothing restarts it: the boot still waits on etcd, and the other nodes stay Failed.
      expect(CPS.map((n) => f.sim.node('staging', n).stage)).toEqual(['booting', 'booting', 'booting']);
      expect([CPS[0]!, CPS[2]!].map((n) => f.sim.node('staging', n).etcdFailed !== undefined)).toEqual([true, true]);
      expect(again.exitCode).toBe(0);
      expect(tableRows(preparing.stdout)[2]).toEqual(['STATE', 'Preparing']);
    },
  );

  threeCps('admits one learner at a time after the restore, and a learner refuses the member list', async ({ f, expect }) => {
    const { path } = await snapshot(f, 'staging', CPS[0]!);
    await wipeAndWaitPreparing(f, 'staging', CPS);
    // Whichever joins first stays a learner while the fault holds; the other is refused meanwhile.
    f.sim.faults.set('staging', { etcdLearnerStuck: ['talos-stg-cp-2', 'talos-stg-cp-3'] });
    await f.talosctl('staging', ['-n', CPS[0]!, '-e', CPS[0]!, 'bootstrap', '--recover-from', path]);
    await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'etcd-learner-refused'), 5000, 'a second learner refused');
    const learner = f.sim.events.find((e) => e.kind === 'etcd-learner-added')!.node!;
    const fromLearner = await f.talosctl('staging', ['-n', learner, '-e', learner, 'etcd', 'members']);
    const fromVoter = await f.talosctl('staging', ['-n', CPS[0]!, '-e', CPS[0]!, 'etcd', 'members']);
    const addedWhileHeld = f.sim.events.filter((e) => e.kind === 'etcd-learner-added').length;
    f.sim.faults.clear('staging');
    await f.sim.waitFor(() => f.sim.events.filter((e) => e.kind === 'etcd-learner-promoted').length === 2, 5000, 'both learners promoted');
    const order = f.sim.events.filter((e) => e.kind === 'etcd-learner-added' || e.kind === 'etcd-learner-promoted').map((e) => e.kind);

    expect(addedWhileHeld).toBe(1);
    expect(f.sim.events.filter((e) => e.kind === 'etcd-learner-refused').map((e) => e.node)).toEqual(
      CPS.slice(1).filter((n) => n !== learner),
    );
    expect(fromLearner.exitCode).toBe(1);
    expect(fromLearner.stderr).toContain('etcdserver: rpc not supported for learner');
    expect(fromVoter.exitCode).toBe(0);
    expect(order).toEqual(['etcd-learner-added', 'etcd-learner-promoted', 'etcd-learner-added', 'etcd-learner-promoted']);
  });
});
