import { describe } from 'vitest';
import { parseEtcdMembers } from '../../src/talos/parse-etcd-members.ts';
import { etcdMembers, hasQuorum, nodeReady } from './cluster-model.ts';
import { replicaView } from './longhorn.ts';
import { simTest, type SimFixture } from './sim-fixture.ts';

const it = simTest();
const CP2 = 'talos-prd-cp-2';
const VM2 = `proxmox_virtual_environment_vm.talos["${CP2}"]`;
const APPLY2 = `talos_machine_configuration_apply.this["${CP2}"]`;

interface JsonPlan {
  resource_changes: { address: string; action_reason?: string; change: { actions: string[] } }[];
}

async function planJson(f: SimFixture, cluster: string, args: string[]): Promise<JsonPlan> {
  const planned = await f.tofu(cluster, ['plan', '-input=false', '-out=review.tfplan', ...args]);
  if (planned.exitCode !== 0) throw new Error(planned.stderr);
  return JSON.parse((await f.tofu(cluster, ['show', '-json', 'review.tfplan'])).stdout) as JsonPlan;
}

const acting = (plan: JsonPlan): [string, string, string | undefined][] =>
  plan.resource_changes
    .filter((c) => c.change.actions.join() !== 'no-op')
    .map((c) => [c.address, c.change.actions.join(), c.action_reason]);

describe.concurrent('a failed machine', () => {
  it('does not answer talosctl, goes Unknown with its pods, and stays an unreachable etcd member', async ({ f, expect }) => {
    const pods = f.sim.cluster('production').kube.pods.filter((p) => p.nodeName === CP2).length;
    f.sim.failMachine('production', CP2);
    const cluster = f.sim.cluster('production');
    const node = f.sim.node('production', CP2);

    const version = await f.talosctl('production', ['--nodes', '10.0.30.12', 'version']);
    const members = await f.talosctl('production', ['--nodes', '10.0.30.11', 'etcd', 'members']);
    const status = await f.talosctl('production', ['--nodes', '10.0.30.12', 'etcd', 'status']);

    expect(version.exitCode).toBe(1);
    expect(version.stderr).toContain('dial tcp 10.0.30.12:50000: connect: no route to host');
    expect(members.exitCode).toBe(0);
    expect(parseEtcdMembers(members.stdout).map((m) => m.hostname)).toContain(CP2);
    expect(status.exitCode).toBe(1);
    expect(status.stderr).toContain('code = Unavailable');
    expect(nodeReady(cluster, node)).toBe('Unknown');
    expect(cluster.kube.pods.filter((p) => p.nodeName === CP2).length).toBe(pods);
    expect(etcdMembers(cluster).map((m) => m.hostname)).toContain(CP2);
    expect(hasQuorum(cluster)).toBe(true);
    const volume = cluster.kube.volumes.find((v) => v.replicas.includes(CP2));
    expect(volume && replicaView(cluster, f.sim.state, volume, CP2, f.sim.timing, Date.now()).currentState).toBe('error');
    expect(f.sim.events.filter((e) => e.kind === 'machine-failed').map((e) => e.node)).toEqual(['10.0.30.12']);
  });
});

describe.concurrent('a failed machine whose power comes back', () => {
  it('boots as the same member, or with etcd failing when its member was removed meanwhile', async ({ f, expect }) => {
    f.sim.failMachine('production', CP2);
    f.sim.failMachine('production', 'talos-prd-cp-3');
    const cp3 = f.sim.node('production', 'talos-prd-cp-3').etcdMemberId;
    f.sim.restoreMachine('production', 'talos-prd-cp-3');
    await f.sim.waitFor(() => f.sim.node('production', 'talos-prd-cp-3').stage === 'running', 5000, 'cp-3 back');
    const removed = await f.talosctl('production', [
      '--nodes',
      '10.0.30.11',
      'etcd',
      'remove-member',
      f.sim.node('production', CP2).etcdMemberId ?? '',
    ]);
    f.sim.restoreMachine('production', CP2);
    await f.sim.waitFor(() => f.sim.node('production', CP2).stage === 'running', 5000, 'cp-2 back');

    const service = await f.talosctl('production', ['--nodes', '10.0.30.12', 'service', 'etcd']);
    const cluster = f.sim.cluster('production');
    expect(removed.exitCode).toBe(0);
    expect(etcdMembers(cluster).map((m) => [m.hostname, m.etcdMemberId])).toEqual([
      ['talos-prd-cp-1', f.sim.node('production', 'talos-prd-cp-1').etcdMemberId],
      ['talos-prd-cp-3', cp3],
    ]);
    expect(service.stdout).toMatch(/^STATE +Failed$/m);
    expect(nodeReady(cluster, f.sim.node('production', CP2))).toBe('True');
  });
});

describe.concurrent('talosctl etcd remove-member', () => {
  it('removes the failed member through a healthy control plane and records it', async ({ f, expect }) => {
    f.sim.failMachine('production', CP2);
    const id = f.sim.node('production', CP2).etcdMemberId ?? '';

    const removed = await f.talosctl('production', ['--nodes', '10.0.30.11', 'etcd', 'remove-member', id]);
    const again = await f.talosctl('production', ['--nodes', '10.0.30.11', 'etcd', 'remove-member', id]);

    expect(removed).toMatchObject({ exitCode: 0, stdout: '', stderr: '' });
    expect(etcdMembers(f.sim.cluster('production')).map((m) => m.hostname)).toEqual(['talos-prd-cp-1', 'talos-prd-cp-3']);
    expect(f.sim.events.filter((e) => e.kind === 'etcd-member-removed').map((e) => [e.node, e.detail])).toEqual([['10.0.30.12', id]]);
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toBe(
      `rpc error: code = NotFound desc = failed to remove member ${BigInt(`0x${id}`).toString(10)}: etcdserver: member not found\n`,
    );
  });

  it('refuses a bad id on the client and a worker on the server', async ({ f, expect }) => {
    const hostname = await f.talosctl('staging', ['--nodes', '10.0.20.204', 'etcd', 'remove-member', 'talos-stg-cp-1']);
    const prefixed = await f.talosctl('staging', ['--nodes', '10.0.20.204', 'etcd', 'remove-member', '0x12']);
    const worker = await f.talosctl('staging', ['--nodes', '10.0.20.205', 'etcd', 'remove-member', 'abc']);

    expect(hostname.stderr).toBe(
      'error parsing member ID: error parsing etcd member id: strconv.ParseUint: parsing "talos-stg-cp-1": invalid syntax\n',
    );
    expect(prefixed.exitCode).toBe(1);
    expect(worker.stderr).toBe('rpc error: code = Unimplemented desc = etcd remove member is only available on control plane nodes\n');
    expect(f.sim.events.some((e) => e.kind === 'etcd-member-removed')).toBe(false);
  });

  it('refuses to remove a healthy member when the rest would lose quorum, and anything without a leader', async ({ f, expect }) => {
    f.sim.failMachine('production', CP2);
    const cp3 = f.sim.node('production', 'talos-prd-cp-3').etcdMemberId ?? '';
    const decimal = BigInt(`0x${cp3}`).toString(10);

    const unhealthy = await f.talosctl('production', ['--nodes', '10.0.30.11', 'etcd', 'remove-member', cp3]);
    f.sim.failMachine('production', 'talos-prd-cp-1');
    const noLeader = await f.talosctl('production', ['--nodes', '10.0.30.13', 'etcd', 'remove-member', cp3]);

    expect(unhealthy.stderr).toBe(
      `rpc error: code = Unknown desc = failed to remove member: failed to remove member ${decimal}: etcdserver: unhealthy cluster\n`,
    );
    expect(noLeader.stderr).toBe(
      `rpc error: code = Unknown desc = failed to remove member: failed to remove member ${decimal}: etcdserver: no leader\n`,
    );
    expect(etcdMembers(f.sim.cluster('production'))).toHaveLength(3);
  });

  it('refuses to remove the last member', async ({ f, expect }) => {
    const id = f.sim.node('staging', 'talos-stg-cp-1').etcdMemberId ?? '';

    const result = await f.talosctl('staging', ['--nodes', '10.0.20.204', 'etcd', 'remove-member', id]);

    expect(result.stderr).toContain('etcdserver: re-configuration failed due to not enough started members\n');
  });
});

describe.concurrent('tofu state list and plan -replace', () => {
  it('lists the state one address a line, sorted by type, name and key', async ({ f, expect }) => {
    const all = await f.tofu('production', ['state', 'list']);
    const vms = await f.tofu('production', ['state', 'list', 'proxmox_virtual_environment_vm.talos']);

    expect(all.stdout.split('\n')).toEqual([
      'proxmox_virtual_environment_vm.talos["talos-prd-cp-1"]',
      VM2,
      'proxmox_virtual_environment_vm.talos["talos-prd-cp-3"]',
      'talos_cluster_kubeconfig.this',
      'talos_image_factory_schematic.this',
      'talos_machine_configuration_apply.this["talos-prd-cp-1"]',
      APPLY2,
      'talos_machine_configuration_apply.this["talos-prd-cp-3"]',
      'talos_machine_secrets.this',
      '',
    ]);
    expect(vms.stdout).toBe(
      `proxmox_virtual_environment_vm.talos["talos-prd-cp-1"]\n${VM2}\nproxmox_virtual_environment_vm.talos["talos-prd-cp-3"]\n`,
    );
  });

  it('replaces the requested VM and, through replace_triggered_by, its configuration apply', async ({ f, expect }) => {
    const plan = await planJson(f, 'production', [`-replace=${VM2}`]);
    const text = await f.tofu('production', ['show', 'review.tfplan']);

    expect(acting(plan)).toEqual([
      [VM2, 'delete,create', 'replace_by_request'],
      [APPLY2, 'delete,create', 'replace_by_triggers'],
    ]);
    expect(text.stdout).toContain(`  # ${VM2} will be replaced, as requested\n`);
    expect(text.stdout).toContain(`  # ${APPLY2} will be replaced due to changes in replace_triggered_by\n`);
  });

  it('replaces only the VM when the estate does not tie its configuration apply, unless that is requested too', async ({ f, expect }) => {
    await f.sim.terraform.setLifecycle('production', 'talos_machine_configuration_apply.this', {});
    await f.sim.terraform.commit('production: the configuration apply no longer follows its VM');

    const alone = await planJson(f, 'production', [`-replace=${VM2}`]);
    const both = await planJson(f, 'production', [`-replace=${VM2}`, `-replace=${APPLY2}`]);

    expect(acting(alone)).toEqual([[VM2, 'delete,create', 'replace_by_request']]);
    expect(acting(both)).toEqual([
      [VM2, 'delete,create', 'replace_by_request'],
      [APPLY2, 'delete,create', 'replace_by_request'],
    ]);
  });

  it('ignores an instance that does not exist, warns about a missing key, and refuses a bad address', async ({ f, expect }) => {
    const missing = await planJson(f, 'production', ['-replace=proxmox_virtual_environment_vm.talos["talos-prd-cp-9"]']);
    const keyless = await f.tofu('production', ['plan', '-input=false', '-replace=proxmox_virtual_environment_vm.talos']);
    const bad = await f.tofu('production', ['plan', '-input=false', '-replace=data.talos_client_configuration.this']);

    expect(acting(missing)).toEqual([]);
    expect(keyless.exitCode).toBe(0);
    expect(keyless.stdout).toContain('│ Warning: Incompletely-matched force-replace resource instance\n');
    expect(keyless.stdout).toContain(`│   -replace=${JSON.stringify(VM2)}\n`);
    expect(bad.exitCode).toBe(1);
    expect(bad.stderr).toContain('│ Error: Invalid force-replace address "data.talos_client_configuration.this"\n');
  });

  it('shows an unrelated change beside the replacement when a fault adds one', async ({ f, expect }) => {
    f.sim.faults.set('production', { tofuPlan: 'changes' });

    const plan = await planJson(f, 'production', [`-replace=${VM2}`]);

    expect(acting(plan).map(([address]) => address)).toEqual([VM2, 'talos_machine_configuration_apply.this["talos-prd-cp-1"]', APPLY2]);
  });
});

const boot = simTest({ timing: { stepMs: 4, rebootMs: 80, bootMs: 40, learnerPromoteMs: 60 } });

describe.concurrent('replacing a failed node', () => {
  boot('a learner is not promoted while etcd has no leader', async ({ f, expect }) => {
    f.sim.failMachine('production', CP2);
    await f.talosctl('production', ['--nodes', '10.0.30.11', 'etcd', 'remove-member', f.sim.node('production', CP2).etcdMemberId ?? '']);
    await planJson(f, 'production', [`-replace=${VM2}`]);
    // The learner stays one until etcd has lost its leader: its promotion then waits on the leader alone.
    f.sim.faults.set('production', { etcdLearnerStuck: [CP2] });
    await f.tofu('production', ['apply', '-input=false', 'review.tfplan']);
    await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'etcd-learner-added' && e.node === '10.0.30.12'), 5000, 'learner');
    f.sim.faults.set('production', { etcdNoLeader: true });
    f.sim.faults.clear('production', 'etcdLearnerStuck');

    // Talos retries the promotion every step meanwhile: give it a few.
    await new Promise((r) => setTimeout(r, 200));
    const stillLearner = f.sim.node('production', CP2).etcdLearner;
    f.sim.faults.clear('production', 'etcdNoLeader');
    await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'etcd-learner-promoted' && e.node === '10.0.30.12'), 5000, 'promotion');

    expect(stillLearner).toBe(true);
    expect(f.sim.node('production', CP2).etcdLearner).toBe(false);
  });

  boot('a control plane whose member was removed joins as a learner, is promoted, and goes Ready', async ({ f, expect }) => {
    f.sim.failMachine('production', CP2);
    const old = f.sim.node('production', CP2).etcdMemberId ?? '';
    await f.talosctl('production', ['--nodes', '10.0.30.11', 'etcd', 'remove-member', old]);
    await planJson(f, 'production', [`-replace=${VM2}`]);

    const applied = await f.tofu('production', ['apply', '-input=false', 'review.tfplan']);
    await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'etcd-learner-promoted' && e.node === '10.0.30.12'), 5000, 'promotion');
    await f.sim.waitFor(() => nodeReady(f.sim.cluster('production'), f.sim.node('production', CP2)) === 'True', 5000, 'Ready');

    expect(applied.exitCode).toBe(0);
    const node = f.sim.node('production', CP2);
    expect([node.failed, node.stage, node.etcdLearner, node.etcdMemberId === old]).toEqual([undefined, 'running', false, false]);
    const replacement = new Set(['machine-failed', 'etcd-member-removed', 'vm-replaced', 'etcd-learner-added', 'etcd-learner-promoted']);
    expect(f.sim.events.filter((e) => e.node === '10.0.30.12' && replacement.has(e.kind)).map((e) => e.kind)).toEqual([
      'machine-failed',
      'etcd-member-removed',
      'vm-replaced',
      'etcd-learner-added',
      'etcd-learner-promoted',
    ]);
    const members = await f.talosctl('production', ['--nodes', '10.0.30.12', 'etcd', 'members']);
    expect(parseEtcdMembers(members.stdout).filter((m) => m.hostname === CP2)).toHaveLength(1);
  });

  boot('without remove-member the old member stays listed until the new machine joins and removes it', async ({ f, expect }) => {
    f.sim.failMachine('production', CP2);
    const old = f.sim.node('production', CP2).etcdMemberId ?? '';
    f.sim.faults.set('production', { etcdNoLeader: true });
    await planJson(f, 'production', [`-replace=${VM2}`]);

    await f.tofu('production', ['apply', '-input=false', 'review.tfplan']);
    // The new machine boots and stays in etcd's join loop while there is no leader.
    await f.sim.waitFor(() => f.sim.node('production', CP2).stage === 'booting', 5000, 'the new machine booting');
    const waiting = etcdMembers(f.sim.cluster('production')).map((m) => [m.hostname, m.etcdMemberId]);
    const service = await f.talosctl('production', ['--nodes', '10.0.30.12', 'service', 'etcd']);
    f.sim.faults.clear('production', 'etcdNoLeader');
    await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'etcd-learner-promoted' && e.node === '10.0.30.12'), 5000, 'promotion');

    expect(waiting).toContainEqual([CP2, old]);
    expect(waiting).toHaveLength(3);
    expect(service.stdout).toMatch(/^STATE +Preparing$/m);
    expect(f.sim.events.filter((e) => e.kind === 'etcd-member-superseded').map((e) => e.detail)).toEqual([old]);
    expect(
      etcdMembers(f.sim.cluster('production'))
        .filter((m) => m.hostname === CP2)
        .map((m) => m.etcdMemberId === old),
    ).toEqual([false]);
  });

  boot('a VM recreated without its configuration apply stays in maintenance mode and never joins', async ({ f, expect }) => {
    await f.sim.terraform.setLifecycle('production', 'talos_machine_configuration_apply.this', {});
    await f.sim.terraform.commit('production: the configuration apply no longer follows its VM');
    f.sim.failMachine('production', CP2);
    await f.talosctl('production', ['--nodes', '10.0.30.11', 'etcd', 'remove-member', f.sim.node('production', CP2).etcdMemberId ?? '']);
    await planJson(f, 'production', [`-replace=${VM2}`]);

    const applied = await f.tofu('production', ['apply', '-input=false', 'review.tfplan']);
    await new Promise((r) => setTimeout(r, 200));
    const version = await f.talosctl('production', ['--nodes', '10.0.30.12', 'version']);

    expect(applied.exitCode).toBe(0);
    expect(f.sim.node('production', CP2).stage).toBe('maintenance');
    expect(f.sim.events.filter((e) => e.node === '10.0.30.12' && e.kind === 'etcd-learner-added')).toEqual([]);
    expect(version.exitCode).toBe(1);
    expect(version.stderr).toContain('tls: failed to verify certificate: x509: certificate signed by unknown authority');
  });

  boot("a VM recreated from a stale ISO joins running the ISO's Talos", async ({ f, expect }) => {
    f.sim.failMachine('staging', 'talos-stg-w-1');
    f.sim.faults.set('staging', { staleIso: { version: 'v1.11.5' } });
    await planJson(f, 'staging', ['-replace=proxmox_virtual_environment_vm.talos["talos-stg-w-1"]']);

    await f.tofu('staging', ['apply', '-input=false', 'review.tfplan']);
    await f.sim.waitFor(
      () => nodeReady(f.sim.cluster('staging'), f.sim.node('staging', 'talos-stg-w-1')) === 'True',
      5000,
      'the new worker Ready',
    );
    const version = await f.talosctl('staging', ['--nodes', '10.0.20.205', 'version']);

    expect(f.sim.cluster('staging').terraform.applied.talos_version).toBe('v1.11.6');
    expect(version.stdout).toMatch(/Server:\n(?:.*\n)*?\s+Tag:\s+v1\.11\.5\n/);
  });

  boot('a worker is recreated and goes Ready', async ({ f, expect }) => {
    f.sim.failMachine('staging', 'talos-stg-w-1');
    await planJson(f, 'staging', ['-replace=proxmox_virtual_environment_vm.talos["talos-stg-w-1"]']);

    await f.tofu('staging', ['apply', '-input=false', 'review.tfplan']);
    await f.sim.waitFor(
      () => nodeReady(f.sim.cluster('staging'), f.sim.node('staging', 'talos-stg-w-1')) === 'True',
      5000,
      'the new worker Ready',
    );

    expect(
      f.sim.events.filter((e) => e.node === '10.0.20.205' && ['machine-failed', 'vm-replaced', 'up'].includes(e.kind)).map((e) => e.kind),
    ).toEqual(['machine-failed', 'vm-replaced', 'up']);
  });
});
