import { describe } from 'vitest';
import { simTest, tableRows, type SimFixture } from './sim-fixture.ts';
import { productionShape, stagingShape } from './shapes.ts';

// An estate one patch behind (v1.11.5), so the default v1.11.6 client upgrades it and warns of the skew.
const it = simTest({ clusters: [stagingShape({ talosVersion: 'v1.11.5' }), productionShape({ talosVersion: 'v1.11.5' })] });

function installer(f: SimFixture, cluster: string, version: string, platform = 'nocloud'): string {
  const tf = f.sim.cluster(cluster).terraform;
  return `factory.talos.dev/${platform}-installer/${tf.defaultSchematic}:${version}`;
}

describe.concurrent('talosctl upgrade --wait (legacy flow)', () => {
  it('streams the worker upgrade on stderr while it happens and boots the node on the new version', async ({ f, expect }) => {
    const child = f.spawnTalosctl('staging', [
      'upgrade',
      '--nodes',
      '10.0.20.205',
      '--image',
      installer(f, 'staging', 'v1.11.6'),
      '--wait',
    ]);
    const arrivals: { at: number; text: string }[] = [];
    child.stderr?.on('data', (chunk: Buffer) => arrivals.push({ at: Date.now(), text: chunk.toString() }));

    const result = await child;

    const lines = String(result.stderr).trimEnd().split('\n');
    expect(result.exitCode).toBe(0);
    expect(lines[0]).toBe('WARNING: 10.0.20.205: server version 1.11.5 is older than client version 1.11.6');
    expect(lines[1]).toBe('"10.0.20.205": waiting for actor ID');
    expect(lines[2]).toMatch(/^"10\.0\.20\.205": actor ID: [0-9a-f-]{36}$/);
    expect(lines).toContain('"10.0.20.205": sequence: upgrade action: START');
    expect(lines).toContain('"10.0.20.205": task: cordonAndDrainNode action: START');
    expect(lines).toContain('"10.0.20.205": error: stopAllServices task completed');
    expect(lines).toContain('"10.0.20.205": unavailable, retrying...');
    expect(lines).toContain(
      '"10.0.20.205": stage: BOOTING ready: false unmetCond: [name:"nodeReady" reason:"node \\"talos-stg-w-1\\" is not ready"]',
    );
    expect(lines.slice(-2)).toEqual(['"10.0.20.205": events check condition met', '"10.0.20.205": post check passed']);
    expect(String(result.stdout)).toBe('');
    // Progress reached the process long before it exited.
    expect((arrivals.at(-1)?.at ?? 0) - (arrivals[0]?.at ?? 0)).toBeGreaterThan(f.sim.timing.rebootMs / 2);
    const node = f.sim.node('staging', '10.0.20.205');
    expect([node.talosVersion, node.fallbackVersion, node.stage, node.cordoned]).toEqual(['v1.11.6', 'v1.11.5', 'running', false]);
    // podinfo's budget lets one of its two pods go; the other has nowhere to run (the control plane is tainted), so the drain leaves it.
    expect(f.sim.events.filter((e) => e.node === '10.0.20.205').map((e) => [e.kind, e.detail])).toEqual([
      ['upgrade-start', undefined],
      ['drain-blocked', 'apps/podinfo'],
      ['reboot', undefined],
      ['up', undefined],
    ]);
    expect(f.sim.upgradeCount('staging', 'talos-stg-w-1')).toBe(1);
    const version = await f.talosctl('staging', ['version', '-n', '10.0.20.205']);
    expect(version.stdout).toContain('\tNODE:        10.0.20.205\n\tTag:         v1.11.6\n');
  });

  it('makes the node unavailable while it reboots', async ({ f, expect }) => {
    const up = f.sim.holdReboots('staging');
    const child = f.spawnTalosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.11.6')]);
    await f.sim.waitFor(() => f.sim.node('staging', '10.0.20.205').stage === 'rebooting', 5000, 'the reboot');

    const during = await f.talosctl('staging', ['version', '-n', '10.0.20.205']);
    up();

    expect(during.exitCode).toBe(1);
    expect(during.stderr).toContain('error getting version: 1 error occurred:\n\t* 10.0.20.205: rpc error: code = Unavailable');
    expect((await child).exitCode).toBe(0);
  });

  it('leaves a call through a rebooting node that does not answer hanging until the client gives up, where a refusing one fails at once', async ({
    f,
    expect,
  }) => {
    const up = f.sim.holdReboots('staging');
    const request = await f.talosctl('staging', [
      'upgrade',
      '-n',
      '10.0.20.204',
      '-e',
      '10.0.20.204',
      '-i',
      installer(f, 'staging', 'v1.11.6'),
      '--wait=false',
    ]);
    await f.sim.waitFor(() => f.sim.node('staging', '10.0.20.204').stage === 'rebooting', 5000, 'the reboot');
    f.sim.faults.set('staging', { silentWhileRebooting: ['10.0.20.204'] });

    const silent = await f.talosctlUntilHung('staging', ['version', '-n', '10.0.20.204', '-e', '10.0.20.204']);
    f.sim.faults.set('staging', { silentWhileRebooting: undefined });
    const refusing = await f.talosctl('staging', ['version', '-n', '10.0.20.204', '-e', '10.0.20.204']);
    up();

    expect(request.exitCode).toBe(0);
    expect([silent.hung, silent.stdout]).toEqual(['every endpoint is a rebooting node that does not answer', '']);
    expect(refusing.exitCode).toBe(1);
    expect(refusing.stderr).toContain('connect: connection refused');
  });

  it('reports post check passed although the node silently reverted to the old version', async ({ f, expect }) => {
    f.sim.faults.set('staging', { upgradeSilentRevert: ['10.0.20.205'] });

    const result = await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.11.6')]);

    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('"10.0.20.205": post check passed');
    expect(f.sim.node('staging', '10.0.20.205').talosVersion).toBe('v1.11.5');
  });

  it('hangs at "waiting for actor ID" through the VIP, while the node upgrades anyway', async ({ f, expect }) => {
    const result = await f.talosctlUntilHung(
      'production',
      ['upgrade', '-n', '10.0.30.11', '-e', '10.0.30.10', '-i', installer(f, 'production', 'v1.11.6')],
      { printed: 'waiting for actor ID' },
    );

    expect(result.hung).toBe('waiting for actor ID');
    expect(result.stderr.trimEnd().split('\n').at(-1)).toBe('"10.0.30.11": waiting for actor ID');
    const call = f.sim.calls.find((c) => c.argv.includes('10.0.30.10'));
    await f.sim.waitFor(() => f.sim.node('production', '10.0.30.11').talosVersion === 'v1.11.6', 5000, 'the background upgrade');
    expect(call?.exitCode).toBeNull();
  });

  it('hangs through the upgrading control plane itself when another control plane could have been the endpoint', async ({ f, expect }) => {
    const production = await f.talosctlUntilHung('production', [
      'upgrade',
      '-n',
      '10.0.30.12',
      '-e',
      '10.0.30.12',
      '-i',
      installer(f, 'production', 'v1.11.6'),
    ]);
    const staging = await f.talosctl('staging', [
      'upgrade',
      '-n',
      '10.0.20.204',
      '-e',
      '10.0.20.204',
      '-i',
      installer(f, 'staging', 'v1.11.6'),
    ]);
    f.sim.state.behavior.selfEndpointHang = 'always';
    const strict = await f.talosctlUntilHung('staging', [
      'upgrade',
      '-n',
      '10.0.20.204',
      '-e',
      '10.0.20.204',
      '-i',
      installer(f, 'staging', 'v1.11.6'),
    ]);

    expect(production.hung).toBe('waiting for actor ID');
    expect(staging.exitCode).toBe(0);
    expect(strict.hung).toBe('waiting for actor ID');
  });

  it('refuses an installer image the factory does not have', async ({ f, expect }) => {
    const image = installer(f, 'staging', 'v1.11.99');

    const result = await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', image]);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(`"10.0.20.205": rpc error: code = Unknown desc = error validating installer image "${image}": `);
    expect(f.sim.upgradeCount('staging', '10.0.20.205')).toBe(0);
  });

  it('fails in the installer pre-flight checks when the host is too old, then reboots on the old version', async ({ f, expect }) => {
    f.sim.node('staging', '10.0.20.205').talosVersion = 'v1.8.4';

    const result = await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.11.6')]);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /"10\.0\.20\.205": sequence error: .*pre-flight checks failed: host version 1\.8\.4 is too old to upgrade to Talos 1\.11\.6\n$/,
    );
    await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'up'), 5000, 'the recovery boot');
    expect(f.sim.node('staging', '10.0.20.205').talosVersion).toBe('v1.8.4');
  });

  it('loses the node behind a generic installer that renames its interface', async ({ f, expect }) => {
    const result = await f.talosctl('staging', [
      'upgrade',
      '-n',
      '10.0.20.205',
      '-i',
      installer(f, 'staging', 'v1.11.6', 'metal'),
      '--timeout',
      '600ms',
    ]);

    expect(result.exitCode).toBe(1);
    expect(result.stderr.trimEnd().split('\n').at(-1)).toBe('"10.0.20.205": context deadline exceeded');
    await f.sim.waitFor(() => f.sim.node('staging', '10.0.20.205').stage === 'lost', 5000, 'the node lost');
  });

  it('prints the acknowledgement table with --wait=false', async ({ f, expect }) => {
    const result = await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.11.6'), '--wait=false']);

    const rows = tableRows(result.stdout);
    expect(rows[0]).toEqual(['NODE', 'ACK', 'STARTED']);
    expect(rows[1]?.slice(0, 2)).toEqual(['10.0.20.205', 'Upgrade request received']);
    expect(rows[1]?.[2]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{9} \+0000 UTC m=\+\d+\.\d{9}$/);
  });
});

describe.concurrent('talosctl rollback', () => {
  it('is silent and reboots the node back onto the previous version', async ({ f, expect }) => {
    await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.11.6')]);

    const result = await f.talosctl('staging', ['rollback', '-n', '10.0.20.205']);

    expect(result).toMatchObject({ exitCode: 0, stdout: '', stderr: '' });
    await f.sim.waitFor(() => f.sim.events.filter((e) => e.kind === 'up').length === 2, 5000, 'the rollback boot');
    expect(f.sim.node('staging', '10.0.20.205').talosVersion).toBe('v1.11.5');
    expect(f.sim.events.find((e) => e.kind === 'rollback')).toMatchObject({ fromVersion: 'v1.11.6', toVersion: 'v1.11.5' });
  });

  it('can leave the node down for good', async ({ f, expect }) => {
    await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.11.6')]);
    f.sim.faults.set('staging', { rollbackNoReturn: ['10.0.20.205'] });

    await f.talosctl('staging', ['rollback', '-n', '10.0.20.205']);

    await f.sim.waitFor(() => f.sim.node('staging', '10.0.20.205').stage === 'lost', 5000, 'the lost node');
    const version = await f.talosctl('staging', ['version', '-n', '10.0.20.205']);
    expect(version.exitCode).toBe(1);
    expect(version.stderr).toContain('connect: no route to host');
  });
});

describe.concurrent('talosctl reset', () => {
  it('drains a worker, stops it and removes it from discovery', async ({ f, expect }) => {
    const result = await f.talosctl('staging', ['reset', '--nodes', '10.0.20.205', '--graceful', '--reboot=false']);

    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('"10.0.20.205": task: cordonAndDrainNode action: START');
    expect(result.stderr.trimEnd().split('\n').at(-1)).toBe('"10.0.20.205": events check condition met');
    await f.sim.waitFor(() => f.sim.node('staging', '10.0.20.205').stage === 'off', 5000, 'power off');
    const members = tableRows((await f.talosctl('staging', ['get', 'members', '-n', '10.0.20.204'])).stdout);
    expect(members.map((r) => r[3])).toEqual(['ID', 'talos-stg-cp-1']);
  });

  it('cannot gracefully remove the only etcd member', async ({ f, expect }) => {
    const result = await f.talosctl('staging', ['reset', '-n', '10.0.20.204']);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('"10.0.20.204": task: leaveEtcd action: START');
    expect(result.stderr).toMatch(/"10\.0\.20\.204": sequence error: .*not enough started members\n$/);
    expect(f.sim.node('staging', '10.0.20.204').etcdMember).toBe(true);
  });

  it('refuses a second request for a control plane while its first holds the upgrade mutex, and upgrades it once', async ({
    f,
    expect,
  }) => {
    f.sim.timing.stepMs = 300;
    const first = f.spawnTalosctl('production', [
      'upgrade',
      '-n',
      '10.0.30.11',
      '-e',
      '10.0.30.12',
      '-i',
      installer(f, 'production', 'v1.11.6'),
    ]);
    await f.sim.waitFor(
      () => f.sim.cluster('production').etcd.upgradeMutexHolder === '10.0.30.11',
      5000,
      'the first request validating etcd',
    );

    const again = await f.talosctl('production', [
      'upgrade',
      '-n',
      '10.0.30.11',
      '-e',
      '10.0.30.13',
      '-i',
      installer(f, 'production', 'v1.11.6'),
    ]);

    expect(again.exitCode).toBe(1);
    expect(again.stderr).toContain('failed to acquire upgrade mutex: mutex: Locked by another session');
    expect((await first).exitCode).toBe(0);
    expect(f.sim.upgradeCount('production', '10.0.30.11')).toBe(1);
  });

  it('leaves etcd when a control plane of three is reset', async ({ f, expect }) => {
    const result = await f.talosctl('production', ['reset', '-n', '10.0.30.13', '-e', '10.0.30.11']);

    const members = tableRows((await f.talosctl('production', ['etcd', 'members', '-n', '10.0.30.11'])).stdout);
    expect(result.exitCode).toBe(0);
    expect(members.slice(1).map((r) => r[2])).toEqual(['talos-prd-cp-1', 'talos-prd-cp-2']);
  });
});

describe.concurrent('upgrade faults', () => {
  it('rejects an upgrade with an injected server error', async ({ f, expect }) => {
    f.sim.faults.set('staging', { upgradeError: { '*': 'failed to acquire upgrade mutex: mutex: Locked by another session' } });

    const result = await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.11.6')]);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(
      '"10.0.20.205": rpc error: code = Unknown desc = failed to acquire upgrade mutex: mutex: Locked by another session\n',
    );
    expect(f.sim.events.map((e) => e.kind)).toEqual(['upgrade-rejected']);
  });

  it('stalls in the upgrade phase until the client times out, leaving the node cordoned on the old version', async ({ f, expect }) => {
    f.sim.faults.set('staging', { upgradeHang: ['10.0.20.205'] });

    const result = await f.talosctl('staging', [
      'upgrade',
      '-n',
      '10.0.20.205',
      '-i',
      installer(f, 'staging', 'v1.11.6'),
      '--timeout',
      '400ms',
    ]);

    const lines = result.stderr.trimEnd().split('\n');
    expect(result.exitCode).toBe(1);
    expect(lines.slice(-2)).toEqual(['"10.0.20.205": task: upgrade action: START', '"10.0.20.205": context deadline exceeded']);
    const node = f.sim.node('staging', '10.0.20.205');
    expect([node.stage, node.cordoned, node.talosVersion]).toEqual(['upgrading', true, 'v1.11.5']);
  });

  it('waits in vain for a node that stays NotReady after the reboot', async ({ f, expect }) => {
    f.sim.faults.set('staging', { upgradeStaysNotReady: ['10.0.20.205'] });

    const result = await f.talosctl('staging', [
      'upgrade',
      '-n',
      '10.0.20.205',
      '-i',
      installer(f, 'staging', 'v1.11.6'),
      '--timeout',
      '700ms',
    ]);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(
      '"10.0.20.205": stage: RUNNING ready: false unmetCond: [name:"nodeReady" reason:"node \\"talos-stg-w-1\\" is not ready"]\n',
    );
    expect(result.stderr.trimEnd().split('\n').at(-1)).toBe('"10.0.20.205": context deadline exceeded');
    expect(f.sim.node('staging', '10.0.20.205').talosVersion).toBe('v1.11.6');
  });

  it('says a 1.13 client falls back to the legacy flow against an older server', async ({ f, expect }) => {
    const result = await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.11.6')], {
      version: 'v1.13.9',
    });

    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('New upgrade API is not available, falling back to legacy\n');
  });
});

// Nodes on 1.13 with a matching client: talosctl upgrade.go v1.13.9 takes the LifecycleService path.
const it113 = simTest({ clusters: [stagingShape({ talosVersion: 'v1.13.8' }), productionShape({ talosVersion: 'v1.13.8' })] });

describe.concurrent('talosctl upgrade on 1.13 with a 1.13 client (LifecycleService flow)', () => {
  it113('pulls, installs, drains itself, reboots, waits and uncordons, all on stderr', async ({ f, expect }) => {
    const result = await f.talosctl(
      'production',
      ['upgrade', '-n', '10.0.30.12', '-e', '10.0.30.11', '-i', installer(f, 'production', 'v1.13.9')],
      { version: 'v1.13.9' },
    );

    const lines = result.stderr.trimEnd().split('\n');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('');
    expect(lines[0]).toMatch(/^10\.0\.30\.12: pulled image factory\.talos\.dev\/nocloud-installer\/[0-9a-f]+@sha256:[0-9a-f]{64}$/);
    expect(lines[1]).toMatch(/^10\.0\.30\.12: \d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d running Talos installer v1\.13\.9$/);
    const order = [
      '10.0.30.12: Exit code: 0',
      '10.0.30.12: upgrade completed',
      'talos-prd-cp-2: cordoning node',
      'talos-prd-cp-2: node cordoned',
      'talos-prd-cp-2: draining node',
      'talos-prd-cp-2: node drained',
      '"10.0.30.12": sequence: reboot action: START',
      '"10.0.30.12": error: reboot sequence completed',
      '"10.0.30.12": error: stopAllServices task completed',
      '"10.0.30.12": post check passed',
      'talos-prd-cp-2: waiting for node to become Ready',
      'talos-prd-cp-2: uncordoning node',
      'talos-prd-cp-2: node uncordoned',
    ];
    const positions = order.map((l) => lines.indexOf(l));
    expect(positions).toEqual(positions.toSorted((a, b) => a - b));
    expect(order.every((l) => lines.includes(l))).toBe(true);
    expect(lines).not.toContain('New upgrade API is not available, falling back to legacy');
    const node = f.sim.node('production', '10.0.30.12');
    expect([node.talosVersion, node.fallbackVersion, node.stage, node.cordoned]).toEqual(['v1.13.9', 'v1.13.8', 'running', false]);
    expect(f.sim.upgradeCount('production', 'talos-prd-cp-2')).toBe(1);
  });

  it113('ignores --wait=false while --drain is on, and with --drain=false --wait=false only asks for the reboot', async ({ f, expect }) => {
    // Without podinfo's budget, whose second pod has nowhere to go on this estate, the drain passes.
    f.sim.cluster('staging').kube.pdbs = [];
    const drainedAgain = await f.talosctl(
      'staging',
      ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.13.9'), '--wait=false'],
      { version: 'v1.13.9' },
    );

    expect(drainedAgain.exitCode).toBe(0);
    expect(drainedAgain.stderr).toContain('talos-stg-w-1: draining node\n');
    expect(drainedAgain.stderr).toContain('"10.0.20.205": post check passed\n');

    const asked = await f.talosctl(
      'staging',
      ['upgrade', '-n', '10.0.20.204', '-e', '10.0.20.204', '-i', installer(f, 'staging', 'v1.13.9'), '--drain=false', '--wait=false'],
      { version: 'v1.13.9' },
    );

    expect(asked.exitCode).toBe(0);
    expect(asked.stderr).toContain('10.0.20.204: upgrade completed\n');
    expect(asked.stderr).not.toContain('cordoning node');
    expect(asked.stderr).not.toContain('actor ID');
    await f.sim.waitFor(
      () => f.sim.node('staging', '10.0.20.204').talosVersion === 'v1.13.9' && f.sim.node('staging', '10.0.20.204').stage === 'running',
      10_000,
      'the reboot',
    );
    expect(f.sim.node('staging', '10.0.20.204').cordoned).toBe(false);
  });

  it113('stops at a drain that times out: cordoned, the new image installed and not booted', async ({ f, expect }) => {
    // podinfo's second pod has nowhere to go (the control plane is tainted) and its budget keeps one: eviction never passes.
    const result = await f.talosctl(
      'staging',
      ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.13.9'), '--drain-timeout', '300ms'],
      { version: 'v1.13.9' },
    );

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('10.0.20.205: upgrade completed\n');
    expect(result.stderr).toMatch(/talos-stg-w-1: evicting pod apps\/podinfo-[a-z0-9]+-[a-z0-9]+\n/);
    expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(
      /^error draining node "talos-stg-w-1": error when evicting pods\/"podinfo-[a-z0-9-]+" -n "apps": global timeout reached: 300ms$/,
    );
    expect(result.stderr).not.toContain('actor ID');
    const node = f.sim.node('staging', '10.0.20.205');
    expect([node.talosVersion, node.stage, node.cordoned]).toEqual(['v1.13.8', 'running', true]);
    expect(f.sim.installedNotBooted('staging', '10.0.20.205')).toBe('v1.13.9');
    expect(f.sim.events.filter((e) => e.node === '10.0.20.205' && e.kind === 'drain-blocked').map((e) => e.detail)).toEqual([
      'apps/podinfo',
    ]);
  });

  it113('has no etcd check: a control plane upgrades while another member is unhealthy, without a refusal', async ({ f, expect }) => {
    f.sim.faults.set('production', { etcdUnhealthy: { 'talos-prd-cp-3': 'Failed' } });
    const result = await f.talosctl(
      'production',
      ['upgrade', '-n', '10.0.30.12', '-e', '10.0.30.11', '-i', installer(f, 'production', 'v1.13.9'), '--drain=false'],
      { version: 'v1.13.9' },
    );

    expect(result.stderr).not.toContain('error validating etcd for upgrade');
    expect(result.stderr).not.toContain('upgrade mutex');
    expect(result.stderr).toContain('10.0.30.12: upgrade completed\n');
  });

  it113('refuses a second upgrade of a node whose installer runs, with FailedPrecondition', async ({ f, expect }) => {
    f.sim.faults.set('staging', { upgradeHang: ['10.0.20.205'] });
    const first = f.spawnTalosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.13.9')], {
      version: 'v1.13.9',
    });
    await f.sim.waitFor(() => f.sim.upgradeCount('staging', 'talos-stg-w-1') === 1, 5000, 'the first installer');

    const second = await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.13.9')], {
      version: 'v1.13.9',
    });
    first.kill();

    expect(second.exitCode).toBe(1);
    expect(second.stderr.trimEnd().split('\n').at(-1)).toBe(
      'error during upgrade: error from node 10.0.20.205: rpc error: code = FailedPrecondition desc = another installation/upgrade is already in progress',
    );
    await first.catch(() => undefined);
  });

  it113('takes the legacy path with --legacy, and a 1.12 client does not know --drain', async ({ f, expect }) => {
    const legacy = await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.13.9'), '--legacy'], {
      version: 'v1.13.9',
    });
    const old = await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.13.9'), '--drain=false'], {
      version: 'v1.12.11',
    });

    expect(legacy.stderr).toContain('WARNING: Forcing use of legacy upgrade method.');
    expect(legacy.stderr).toContain('"10.0.20.205": task: cordonAndDrainNode action: START');
    expect(old.exitCode).toBe(1);
    expect(old.stderr).toContain('unknown flag: --drain');
  });
});

describe.concurrent('talosctl upgrade --no-reboot (v1.13.7+)', () => {
  it113('installs the image and returns: no drain, no reboot, the node keeps running its version', async ({ f, expect }) => {
    const result = await f.talosctl('staging', ['upgrade', '-n', '10.0.20.205', '-i', installer(f, 'staging', 'v1.13.9'), '--no-reboot'], {
      version: 'v1.13.9',
    });

    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('10.0.20.205: upgrade completed\n');
    expect(result.stderr).not.toContain('cordoning node');
    expect(result.stderr).not.toContain('actor ID');
    const node = f.sim.node('staging', '10.0.20.205');
    expect([node.talosVersion, node.cordoned, f.sim.installedNotBooted('staging', '10.0.20.205')]).toEqual(['v1.13.8', false, 'v1.13.9']);
  });
});
