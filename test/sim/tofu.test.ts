import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe } from 'vitest';
import { parseEtcdMembers } from '../../src/talos/parse-etcd-members.ts';
import { parseEtcdStatus } from '../../src/talos/parse-etcd-status.ts';
import { nodeReady } from './cluster-model.ts';
import { simTest, type RunResult, type SimFixture } from './sim-fixture.ts';

const it = simTest();

describe.concurrent('tofu output', () => {
  it('prints raw credentials that carry the canary, without a trailing newline', async ({ f, expect }) => {
    const talosconfig = await f.tofu('production', ['output', '-raw', 'talosconfig']);
    const kubeconfig = await f.tofu('production', ['output', '-raw', 'talos_kubeconfig']);

    expect(talosconfig).toMatchObject({ exitCode: 0, stdout: f.sim.talosconfig('production'), stderr: '' });
    expect(talosconfig.stdout).toMatch(/^context: production\ncontexts:\n {4}production:\n {8}endpoints:\n {12}- 10\.0\.30\.11\n/);
    expect(talosconfig.stdout).toContain(f.sim.canary);
    const key = /key: ([A-Za-z0-9+/=]+)/.exec(talosconfig.stdout)?.[1] ?? '';
    expect(Buffer.from(key, 'base64').toString()).toMatch(/^-----BEGIN ED25519 PRIVATE KEY-----\n/);
    expect(kubeconfig.stdout).toContain(`server: ${f.sim.kubeApiUrl('production')}\n`);
    expect(kubeconfig.stdout).toContain(f.sim.canary);
  });

  it('gives the schematic and the Longhorn installer image of the declared version', async ({ f, expect }) => {
    const schematic = await f.tofu('production', ['output', '-raw', 'talos_image_factory_schematic_id']);
    const longhorn = await f.tofu('production', ['output', '-raw', 'talos_longhorn_installer_image']);
    const staging = await f.tofu('staging', ['output', '-raw', 'talos_longhorn_installer_image']);

    expect(schematic.stdout).toMatch(/^[0-9a-f]{64}$/);
    expect(longhorn.stdout).toBe(`factory.talos.dev/nocloud-installer/${f.sim.cluster('production').terraform.longhornSchematic}:v1.11.6`);
    expect(staging.exitCode).toBe(1);
    expect(staging.stderr).toContain('│ Error: Output "talos_longhorn_installer_image" not found\n');
  });

  it('gives an output the test set in place of the derived one', async ({ f, expect }) => {
    const generic = `factory.talos.dev/installer/${f.sim.cluster('production').terraform.longhornSchematic}:v1.11.6`;
    f.sim.faults.set('production', { tofuOutputs: { talos_longhorn_installer_image: generic } });

    const longhorn = await f.tofu('production', ['output', '-raw', 'talos_longhorn_installer_image']);
    const schematic = await f.tofu('production', ['output', '-raw', 'talos_image_factory_schematic_id']);

    expect(longhorn.stdout).toBe(generic);
    expect(schematic.stdout).toBe(f.sim.cluster('production').terraform.defaultSchematic);
  });

  it('prints every output as JSON with sensitivity and type', async ({ f, expect }) => {
    const result = await f.tofu('staging', ['output', '-json']);

    const outputs = JSON.parse(result.stdout) as Record<string, { sensitive: boolean; type: string; value: string }>;
    expect(outputs['talosconfig']).toEqual({ sensitive: true, type: 'string', value: f.sim.talosconfig('staging') });
    expect(outputs['talos_version']).toEqual({ sensitive: false, type: 'string', value: 'v1.11.6' });
    expect(result.stdout).toMatch(/^\{\n {2}"talos_image_factory_schematic_id": \{\n {4}"sensitive": false,/);
  });

  it('fails every output when the state cannot be read', async ({ f, expect }) => {
    f.sim.faults.set('staging', { tofuOutputFail: 'Failed to load state: 403 Forbidden' });

    const result = await f.tofu('staging', ['output', '-raw', 'talosconfig']);

    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^╷\n│ Error: Failed to load state: 403 Forbidden\n/);
  });
});

describe.concurrent('tofu checks and plans', () => {
  it('reports its version, formatting and validity', async ({ f, expect }) => {
    const version = await f.tofu('staging', ['version']);
    const fmt = await f.tofu('staging', ['fmt', '-check', '-recursive']);
    const validate = await f.tofu('staging', ['validate']);
    f.sim.faults.set('staging', { tofuFmtUnformatted: ['main.tf', 'talos.tf'] });
    const unformatted = await f.tofu('staging', ['fmt', '-check', '-recursive']);

    expect(version.stdout).toMatch(/^OpenTofu v\d+\.\d+\.\d+\non linux_amd64\n/);
    expect(fmt).toMatchObject({ exitCode: 0, stdout: '' });
    expect(validate.stdout).toBe('Success! The configuration is valid.\n\n');
    expect(unformatted).toMatchObject({ exitCode: 3, stdout: 'main.tf\ntalos.tf\n' });
  });

  it('plans no changes with exit code 0', async ({ f, expect }) => {
    const result = await f.tofu('production', ['plan', '-detailed-exitcode', '-lock=false']);

    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('No changes. Your infrastructure matches the configuration.');
  });

  it('shows a replacement of the cluster secrets in the saved plan', async ({ f, expect }) => {
    f.sim.faults.set('production', { tofuPlan: 'replace-secrets' });

    const plan = await f.tofu('production', ['plan', '-detailed-exitcode', '-lock=false', '-out=review.tfplan']);
    const show = await f.tofu('production', ['show', '-json', 'review.tfplan']);

    expect(plan.exitCode).toBe(2);
    expect(plan.stdout).toContain('  # talos_machine_secrets.this must be replaced\n');
    const json = JSON.parse(show.stdout) as {
      format_version: string;
      resource_changes: { address: string; change: { actions: string[] } }[];
    };
    expect(json.format_version).toBe('1.2');
    expect(json.resource_changes.find((c) => c.address === 'talos_machine_secrets.this')?.change.actions).toEqual(['delete', 'create']);
    expect(json.resource_changes.filter((c) => c.change.actions.join() === 'no-op').length).toBeGreaterThan(3);
    expect(existsSync(join(f.sim.cluster('production').terraformDir, 'review.tfplan'))).toBe(true);
  });

  it('marks a VM replacement and plan errors', async ({ f, expect }) => {
    f.sim.faults.set('staging', { tofuPlan: 'replace-vm' });
    await f.tofu('staging', ['plan', '-out=vm.tfplan', '-detailed-exitcode']);
    const show = JSON.parse((await f.tofu('staging', ['show', '-json', 'vm.tfplan'])).stdout) as {
      resource_changes: { type: string; change: { actions: string[] } }[];
    };
    f.sim.faults.set('staging', { tofuPlan: 'error' });
    const failed = await f.tofu('staging', ['plan', '-detailed-exitcode']);

    expect(show.resource_changes.filter((c) => c.type === 'proxmox_virtual_environment_vm').map((c) => c.change.actions)).toEqual([
      ['delete', 'create'],
      ['no-op'],
    ]);
    expect(failed.exitCode).toBe(1);
    expect(failed.stderr).toContain('│ Error: Error acquiring the state lock\n');
  });
});

describe.concurrent('Image Factory', () => {
  it('lists versions and serves assets of known schematics only', async ({ f, expect }) => {
    const schematic = f.sim.cluster('production').terraform.longhornSchematic ?? '';
    const versions = (await (await fetch(`${f.sim.imageFactoryUrl}/versions`)).json()) as string[];
    const iso = await fetch(`${f.sim.imageFactoryUrl}/image/${schematic}/v1.12.11/nocloud-amd64.iso`);
    const checksum = await fetch(`${f.sim.imageFactoryUrl}/image/${schematic}/v1.12.11/nocloud-amd64.iso.sha256`);
    const unknown = await fetch(`${f.sim.imageFactoryUrl}/image/${'0'.repeat(64)}/v1.12.11/nocloud-amd64.iso`);

    expect(versions).toEqual(expect.arrayContaining(['v1.10.9', 'v1.11.5', 'v1.11.6', 'v1.12.10', 'v1.12.11', 'v1.13.9']));
    expect(iso.status).toBe(200);
    expect((await iso.arrayBuffer()).byteLength).toBeGreaterThan(0);
    expect(checksum.status).toBe(402);
    expect(unknown.status).toBe(404);
  });
});

interface ShownPlan {
  format_version: string;
  variables: Record<string, { value: unknown }>;
  resource_changes: {
    address: string;
    type: string;
    change: { actions: string[]; before: unknown; after: unknown; before_sensitive?: unknown; after_sensitive?: unknown };
    action_reason?: string;
  }[];
  output_changes: Record<
    string,
    { actions: string[]; before?: unknown; after?: unknown; before_sensitive: boolean; after_sensitive: boolean }
  >;
}

/** Plans with `-out` and shows the saved plan as JSON; returns both runs. */
async function planAndShow(f: SimFixture, cluster: string): Promise<{ plan: RunResult; json: ShownPlan; show: RunResult }> {
  const plan = await f.tofu(cluster, ['plan', '-detailed-exitcode', '-input=false', '-no-color', '-out=review.tfplan']);
  const show = await f.tofu(cluster, ['show', '-json', 'review.tfplan']);
  return { plan, json: JSON.parse(show.stdout) as ShownPlan, show };
}

function acting(json: ShownPlan): Record<string, string> {
  return Object.fromEntries(
    json.resource_changes
      .filter((c) => c.change.actions.join() !== 'no-op')
      .map((c) => [c.address, [c.change.actions.join(','), c.action_reason].filter(Boolean).join(' ')]),
  );
}

const NEW_CP = { hostname: 'talos-prd-cp-4', address: '10.0.30.14', role: 'controlplane', host: 'pve4', longhorn: true } as const;

describe.concurrent('tofu plan of declared changes', () => {
  it('creates the VM and the machine configuration of an added node', async ({ f, expect }) => {
    await f.sim.terraform.addNode('production', NEW_CP);

    const { plan, json } = await planAndShow(f, 'production');

    expect(plan.exitCode).toBe(2);
    expect(plan.stdout).toContain(
      '  # proxmox_virtual_environment_vm.talos["talos-prd-cp-4"] will be created\n  + resource "proxmox_virtual_environment_vm" "talos" {\n',
    );
    expect(plan.stdout).toContain('      + id              = (known after apply)\n');
    expect(plan.stdout).toContain('  # talos_machine_configuration_apply.this["talos-prd-cp-4"] will be created\n');
    expect(plan.stdout).toContain('\nPlan: 2 to add, 0 to change, 0 to destroy.\n');
    expect(plan.stdout).toContain('Saved the plan to: review.tfplan\n');
    expect(acting(json)).toEqual({
      'proxmox_virtual_environment_vm.talos["talos-prd-cp-4"]': 'create',
      'talos_machine_configuration_apply.this["talos-prd-cp-4"]': 'create',
    });
    expect(json.variables['talos_nodes']?.value).toMatchObject({ 'talos-prd-cp-4': { address: '10.0.30.14', role: 'controlplane' } });
  });

  it('destroys the VM and the machine configuration of a removed node', async ({ f, expect }) => {
    await f.sim.terraform.removeNode('staging', 'talos-stg-w-1');

    const { plan, json } = await planAndShow(f, 'staging');

    expect(plan.exitCode).toBe(2);
    expect(plan.stdout).toContain(
      '  # proxmox_virtual_environment_vm.talos["talos-stg-w-1"] will be destroyed\n  # (because key ["talos-stg-w-1"] is not in for_each map)\n  - resource',
    );
    expect(plan.stdout).toContain('\nPlan: 0 to add, 0 to change, 2 to destroy.\n');
    expect(acting(json)).toEqual({
      'proxmox_virtual_environment_vm.talos["talos-stg-w-1"]': 'delete delete_because_each_key',
      'talos_machine_configuration_apply.this["talos-stg-w-1"]': 'delete delete_because_each_key',
    });
  });

  it('updates every machine configuration and the version outputs for a new Talos version, never printing credentials', async ({
    f,
    expect,
  }) => {
    await f.sim.terraform.setTalosVersion('production', 'v1.12.11');

    const { plan, json, show } = await planAndShow(f, 'production');
    const human = await f.tofu('production', ['show', '-no-color', 'review.tfplan']);

    expect(plan.exitCode).toBe(2);
    expect(json.format_version).toBe('1.2');
    expect(acting(json)).toEqual({
      'talos_machine_configuration_apply.this["talos-prd-cp-1"]': 'update',
      'talos_machine_configuration_apply.this["talos-prd-cp-2"]': 'update',
      'talos_machine_configuration_apply.this["talos-prd-cp-3"]': 'update',
    });
    expect(json.output_changes['talos_version']).toEqual({
      actions: ['update'],
      before: 'v1.11.6',
      after: 'v1.12.11',
      after_unknown: false,
      before_sensitive: false,
      after_sensitive: false,
    });
    // jsonplan MarshalOutputChanges (v1.12.6): a sensitive output's values in plain text, only flagged sensitive.
    const talosconfig = f.sim.talosconfig('production');
    expect(json.output_changes['talosconfig']).toEqual({
      actions: ['no-op'],
      before: talosconfig,
      after: talosconfig,
      after_unknown: false,
      before_sensitive: true,
      after_sensitive: true,
    });
    expect(json.variables['talos_version']).toEqual({ value: 'v1.12.11' });
    expect(plan.stdout).toContain(
      '        id            = "machine_configuration_apply"\n      ~ talos_version = "v1.11.6" -> "v1.12.11"\n        # (5 unchanged attributes hidden)\n    }\n',
    );
    expect(plan.stdout).toContain('\nChanges to Outputs:\n');
    // Output names are padded to the longest one, talos_image_factory_schematic_id.
    expect(plan.stdout).toContain(`  ~ ${'talos_version'.padEnd(32)} = "v1.11.6" -> "v1.12.11"\n`);
    expect(human.stdout).toBe(plan.stdout.slice(plan.stdout.indexOf('\nOpenTofu used'), plan.stdout.indexOf('\n───')));
    // The human plan never prints a sensitive value; the JSON plan holds them all.
    expect(human.stdout + plan.stdout).not.toContain(f.sim.canary);
    expect(human.stdout + plan.stdout).not.toContain(f.sim.secretsCanary);
    expect(show.stdout).toContain(f.sim.canary);
    expect(show.stdout).toContain(f.sim.secretsCanary);
  });

  it('updates every machine configuration in place for a patch change', async ({ f, expect }) => {
    await f.sim.terraform.changePatch('staging');

    const { plan, json } = await planAndShow(f, 'staging');

    expect(plan.stdout).toContain(
      '  # talos_machine_configuration_apply.this["talos-stg-w-1"] will be updated in-place\n  ~ resource "talos_machine_configuration_apply" "this" {\n',
    );
    expect(plan.stdout).toContain('\nPlan: 0 to add, 2 to change, 0 to destroy.\n');
    expect(acting(json)).toEqual({
      'talos_machine_configuration_apply.this["talos-stg-cp-1"]': 'update',
      'talos_machine_configuration_apply.this["talos-stg-w-1"]': 'update',
    });
    expect(Object.values(json.output_changes).every((o) => o.actions.join() === 'no-op')).toBe(true);
  });

  it('replaces the cluster secrets, and a VM with its machine configuration', async ({ f, expect }) => {
    await f.sim.terraform.replaceSecrets('staging');
    await f.sim.terraform.replaceVm('production', 'talos-prd-cp-2');

    const secrets = await planAndShow(f, 'staging');
    const vm = await planAndShow(f, 'production');

    expect(acting(secrets.json)).toMatchObject({ 'talos_machine_secrets.this': 'delete,create replace_because_cannot_update' });
    expect(secrets.plan.stdout).toContain(
      '  # talos_machine_secrets.this must be replaced\n-/+ resource "talos_machine_secrets" "this" {\n      ~ client_configuration = (sensitive value)\n      ~ generation           = 1 -> 2 # forces replacement\n',
    );
    expect(secrets.json.output_changes['talos_kubeconfig']).toEqual({
      actions: ['update'],
      before: f.sim.kubeconfig('staging'),
      after: null,
      after_unknown: true,
      before_sensitive: true,
      after_sensitive: true,
    });
    expect(secrets.plan.stdout).toContain(`  ~ ${'talos_kubeconfig'.padEnd(32)} = (sensitive value)\n`);
    expect(acting(vm.json)).toEqual({
      'proxmox_virtual_environment_vm.talos["talos-prd-cp-2"]': 'delete,create replace_because_cannot_update',
      'talos_machine_configuration_apply.this["talos-prd-cp-2"]': 'delete,create replace_by_triggers',
    });
    expect(vm.plan.stdout).toContain(
      '  # talos_machine_configuration_apply.this["talos-prd-cp-2"] will be replaced due to changes in replace_triggered_by\n',
    );
  });

  it('forgets and recreates under lifecycle.destroy = false, and creates before destroying under create_before_destroy (OpenTofu 1.12)', async ({
    f,
    expect,
  }) => {
    await f.sim.terraform.setLifecycle('staging', 'talos_machine_secrets.this', { destroy: false });
    await f.sim.terraform.replaceSecrets('staging');
    await f.sim.terraform.setLifecycle('production', 'proxmox_virtual_environment_vm.talos', { create_before_destroy: true });
    await f.sim.terraform.replaceVm('production', 'talos-prd-cp-2');

    const secrets = await planAndShow(f, 'staging');
    const vm = await planAndShow(f, 'production');

    expect(acting(secrets.json)).toMatchObject({ 'talos_machine_secrets.this': 'forget,create replace_because_cannot_update' });
    expect(secrets.plan.stdout).toContain('./+ forget and then create replacement\n');
    expect(secrets.plan.stdout).toContain(
      '  # talos_machine_secrets.this must be replaced - older instance will not be destroyed (lifecycle.destroy = false)\n  ./+ resource "talos_machine_secrets" "this" {\n',
    );
    // A forget-then-create adds and forgets; it destroys nothing.
    expect(secrets.plan.stdout).toMatch(/\nPlan: \d+ to add, \d+ to change, 0 to destroy, 1 to forget\.\n/);
    expect(acting(vm.json)).toMatchObject({
      'proxmox_virtual_environment_vm.talos["talos-prd-cp-2"]': 'create,delete replace_because_cannot_update',
    });
    expect(vm.plan.stdout).toContain('+/- create replacement and then destroy\n');
    expect(vm.plan.stdout).toContain('  # proxmox_virtual_environment_vm.talos["talos-prd-cp-2"] must be replaced\n+/- resource');
  });

  it('forgets a removed instance of a block with lifecycle.destroy = false instead of destroying it', async ({ f, expect }) => {
    await f.sim.terraform.setLifecycle('staging', 'proxmox_virtual_environment_vm.talos', { destroy: false });
    await f.sim.terraform.removeNode('staging', 'talos-stg-w-1');

    const { plan, json } = await planAndShow(f, 'staging');

    expect(acting(json)).toEqual({
      'proxmox_virtual_environment_vm.talos["talos-stg-w-1"]': 'forget forgot_because_lifecycle_destroy_in_config',
      'talos_machine_configuration_apply.this["talos-stg-w-1"]': 'delete delete_because_each_key',
    });
    expect(plan.stdout).toContain(
      '  # proxmox_virtual_environment_vm.talos["talos-stg-w-1"] will be removed from the OpenTofu state but will not be destroyed \n (because lifecycle.destroy = false is set in the configuration)\n',
    );
    expect(plan.stdout).toContain('\nPlan: 0 to add, 0 to change, 1 to destroy, 1 to forget.\n');
  });

  it('forgets a removed instance a `removed` block with destroy = false names, with no action reason, and destroys what none names', async ({
    f,
    expect,
  }) => {
    await f.sim.terraform.declare('staging', (inputs) => {
      inputs.removed = [{ from: 'proxmox_virtual_environment_vm.talos', destroy: false }];
    });
    await f.sim.terraform.removeNode('staging', 'talos-stg-w-1');

    const { plan, json } = await planAndShow(f, 'staging');

    expect(acting(json)).toEqual({
      'proxmox_virtual_environment_vm.talos["talos-stg-w-1"]': 'forget',
      'talos_machine_configuration_apply.this["talos-stg-w-1"]': 'delete delete_because_each_key',
    });
    expect(plan.stdout).toContain(
      '  # proxmox_virtual_environment_vm.talos["talos-stg-w-1"] will be removed from the OpenTofu state but will not be destroyed',
    );
  });

  it('holds sensitive attributes in plain text in the JSON plan, marked only by before_sensitive/after_sensitive, and never in the human plan', async ({
    f,
    expect,
  }) => {
    await f.sim.terraform.changePatch('staging');

    const { plan, json } = await planAndShow(f, 'staging');

    const secrets = json.resource_changes.find((c) => c.address === 'talos_machine_secrets.this');
    expect(secrets?.change.actions).toEqual(['no-op']);
    expect(JSON.stringify(secrets?.change.before)).toContain(f.sim.secretsCanary);
    expect(secrets?.change).toMatchObject({
      before_sensitive: { client_configuration: true, machine_secrets: true },
      after_sensitive: { client_configuration: true, machine_secrets: true },
    });
    expect(JSON.stringify(json.resource_changes.find((c) => c.type === 'talos_cluster_kubeconfig')?.change.before)).toContain(f.sim.canary);
    expect(plan.stdout).not.toContain(f.sim.secretsCanary);
  });

  it('passes an action it has no case for through as its name, as a newer OpenTofu does', async ({ f, expect }) => {
    f.sim.faults.set('staging', { tofuPlanActions: { 'talos_machine_secrets.this': ['Archive'] } });

    const { json } = await planAndShow(f, 'staging');

    expect(acting(json)).toEqual({ 'talos_machine_secrets.this': 'Archive' });
  });

  it('writes a plan file that only the simulator reads', async ({ f, expect }) => {
    await f.tofu('staging', ['plan', '-out=review.tfplan']);

    const file = await readFile(join(f.sim.cluster('staging').terraformDir, 'review.tfplan'), 'utf8');

    expect(() => JSON.parse(file) as unknown).toThrow();
    expect(file).not.toContain(f.sim.canary);
    expect((await f.tofu('staging', ['show', '-json', 'missing.tfplan'])).exitCode).toBe(1);
  });
});

const slowBoot = simTest({ timing: { stepMs: 4, rebootMs: 80, bootMs: 160, learnerPromoteMs: 240 } });

describe.concurrent('tofu apply', () => {
  slowBoot('applies a saved plan that adds a control plane: it joins etcd as a learner, then votes', async ({ f, expect }) => {
    // Held as a learner until the test has looked, then released.
    f.sim.faults.set('production', { etcdLearnerStuck: ['talos-prd-cp-4'] });
    await f.sim.terraform.addNode('production', NEW_CP);
    await f.sim.terraform.commit('production: add talos-prd-cp-4');
    await f.tofu('production', ['plan', '-input=false', '-out=review.tfplan']);
    const serial = f.sim.terraform.serial('production');
    const cluster = f.sim.cluster('production');
    const readiness: string[] = [];
    // The apply waits after its first line until the test has seen it: a fast apply would otherwise end first.
    let seen = (): void => undefined;
    const firstLineSeen = new Promise<void>((resolve) => (seen = resolve));
    f.sim.faults.set('production', { tofuApplyFirstLine: () => firstLineSeen });
    const child = f.spawnTofu('production', ['apply', '-input=false', '-no-color', '-lock-timeout=5m', 'review.tfplan']);
    let runningWhenFirstLine: boolean | undefined;
    child.stdout?.once('data', () => {
      runningWhenFirstLine = f.sim.calls.at(-1)?.endedAt === undefined;
      seen();
    });

    const applied = await child;
    await f.sim.waitFor(
      () => {
        const node = cluster.nodes.find((n) => n.hostname === 'talos-prd-cp-4');
        if (node?.k8sRegistered) readiness.push(nodeReady(cluster, node));
        return node?.stage === 'running';
      },
      5000,
      'the new node running',
    );
    const asLearner = await f.talosctl('production', ['etcd', 'members', '--nodes', '10.0.30.11']);
    const status = await f.talosctl('production', ['etcd', 'status', '--nodes', '10.0.30.14']);
    f.sim.faults.clear('production', 'etcdLearnerStuck');
    await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'etcd-learner-promoted'), 5000, 'the learner promoted');
    const asVoter = await f.talosctl('production', ['etcd', 'members', '--nodes', '10.0.30.11']);

    expect(applied.exitCode).toBe(0);
    expect(runningWhenFirstLine).toBe(true);
    const expected =
      'proxmox_virtual_environment_vm.talos["talos-prd-cp-4"]: Creating...\n' +
      'proxmox_virtual_environment_vm.talos["talos-prd-cp-4"]: Creation complete after 2m14s [id=103]\n' +
      'talos_machine_configuration_apply.this["talos-prd-cp-4"]: Creating...\n' +
      'talos_machine_configuration_apply.this["talos-prd-cp-4"]: Creation complete after 1s [id=machine_configuration_apply]\n' +
      '\nApply complete! Resources: 2 added, 0 changed, 0 destroyed.\n\nOutputs:\n\n' +
      `talos_image_factory_schematic_id = ${JSON.stringify(cluster.terraform.defaultSchematic)}\n`;
    expect(String(applied.stdout).slice(0, expected.length)).toBe(expected);
    expect(String(applied.stdout)).toContain('talosconfig = <sensitive>\n');
    expect(String(applied.stdout)).not.toContain(f.sim.canary);
    expect(f.sim.terraform.serial('production')).toBe(serial + 1);
    expect(f.sim.events.filter((e) => e.kind === 'tofu-apply').map((e) => e.detail)).toEqual(['2 added, 0 changed, 0 destroyed']);
    expect(readiness[0]).toBe('False');
    expect(readiness.at(-1)).toBe('True');
    const learner = parseEtcdMembers(asLearner.stdout).find((m) => m.hostname === 'talos-prd-cp-4');
    expect(learner).toMatchObject({ learner: true, peerUrls: ['https://10.0.30.14:2380'] });
    expect(parseEtcdStatus(status.stdout)[0]).toMatchObject({ node: '10.0.30.14', learner: true });
    // etcd lists members by id, not by name.
    expect(
      parseEtcdMembers(asVoter.stdout)
        .map((m) => [m.hostname, m.learner])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    ).toEqual([
      ['talos-prd-cp-1', false],
      ['talos-prd-cp-2', false],
      ['talos-prd-cp-3', false],
      ['talos-prd-cp-4', false],
    ]);
  });

  it('refuses a saved plan once another apply changed the state', async ({ f, expect }) => {
    await f.sim.terraform.changePatch('staging');
    await f.tofu('staging', ['plan', '-out=review.tfplan']);
    f.sim.terraform.touchState('staging');
    const serial = f.sim.terraform.serial('staging');

    const result = await f.tofu('staging', ['apply', '-input=false', '-no-color', 'review.tfplan']);

    expect(result).toMatchObject({ exitCode: 1, stdout: '' });
    expect(result.stderr).toBe(
      '╷\n│ Error: Saved plan is stale\n│ \n│ The given plan file can no longer be applied because the state was changed by another operation after the plan was created.\n╵\n',
    );
    expect(f.sim.terraform.serial('staging')).toBe(serial);
    expect(f.sim.events.some((e) => e.kind === 'tofu-apply')).toBe(false);
  });

  it('asks for approval without a saved plan, and -input=false does not skip it', async ({ f, expect }) => {
    await f.sim.terraform.removeNode('staging', 'talos-stg-w-1');

    const eof = await f.tofu('staging', ['apply', '-input=false', '-no-color']);
    const declined = await f.tofu('staging', ['apply', '-no-color'], { input: 'no\n' });

    expect(eof.exitCode).toBe(1);
    expect(eof.stdout).toContain(
      "\nPlan: 0 to add, 0 to change, 2 to destroy.\n\nDo you want to perform these actions?\n  OpenTofu will perform the actions described above.\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ",
    );
    expect(eof.stderr).toBe('╷\n│ Error: error asking for approval: EOF\n│ \n│ \n╵\n');
    expect(declined).toMatchObject({ exitCode: 1 });
    expect(declined.stdout).toMatch(/Enter a value: \nApply cancelled\.\n$/);
    expect(f.sim.cluster('staging').nodes.map((n) => n.hostname)).toEqual(['talos-stg-cp-1', 'talos-stg-w-1']);
    expect(f.sim.events.some((e) => e.kind === 'tofu-apply' || e.kind === 'vm-destroyed')).toBe(false);
  });

  it('applies the working tree with -auto-approve, which the recorder shows', async ({ f, expect }) => {
    await f.sim.terraform.changePatch('staging');
    const serial = f.sim.terraform.serial('staging');

    const result = await f.tofu('staging', ['apply', '-auto-approve', '-input=false', '-no-color']);

    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain(
      'talos_machine_configuration_apply.this["talos-stg-cp-1"]: Modifying... [id=machine_configuration_apply]\n',
    );
    expect(result.stdout).toContain('\nApply complete! Resources: 0 added, 2 changed, 0 destroyed.\n');
    expect(f.sim.terraform.serial('staging')).toBe(serial + 1);
    expect(f.sim.cluster('staging').terraform.applied.talos_config_patch_revision).toBe(2);
    expect(f.sim.calls.filter((c) => c.bin === 'tofu' && c.argv.includes('-auto-approve')).map((c) => c.cluster)).toEqual(['staging']);
    expect((await f.tofu('staging', ['plan', '-detailed-exitcode'])).exitCode).toBe(0);
  });

  it('stops after the first resource when the apply fails, with the state written', async ({ f, expect }) => {
    await f.sim.terraform.changePatch('staging');
    await f.tofu('staging', ['plan', '-out=review.tfplan']);
    f.sim.faults.set('staging', {
      tofuApplyFail: 'failed to apply configuration: rpc error: code = Unavailable desc = connection refused',
    });
    const serial = f.sim.terraform.serial('staging');

    const result = await f.tofu('staging', ['apply', '-input=false', '-no-color', 'review.tfplan']);

    expect(result.exitCode).toBe(1);
    expect(result.stdout.match(/Modifications complete/g)).toHaveLength(1);
    expect(result.stdout).not.toContain('Apply complete!');
    expect(result.stderr).toMatch(
      /^╷\n│ Error: failed to apply configuration: rpc error: code = Unavailable desc = connection refused\n│ \n│ {3}with talos_machine_configuration_apply\.this\["talos-stg-w-1"\],\n│ {3}on main\.tf line \d+, in resource "talos_machine_configuration_apply" "this":\n/,
    );
    expect(f.sim.terraform.serial('staging')).toBe(serial + 1);
    expect(f.sim.events.find((e) => e.kind === 'tofu-apply')?.detail).toMatch(/^failed after 1 of 2: /);
    expect((await f.tofu('staging', ['apply', '-input=false', 'review.tfplan'])).stderr).toContain('│ Error: Saved plan is stale\n');
  });

  it('destroys the VM of a removed node: without a reset first its Node and etcd member stay', async ({ f, expect }) => {
    await f.sim.terraform.removeNode('production', 'talos-prd-cp-3');
    await f.tofu('production', ['plan', '-out=review.tfplan']);
    const cluster = f.sim.cluster('production');

    const result = await f.tofu('production', ['apply', '-input=false', 'review.tfplan']);
    const members = await f.talosctl('production', ['etcd', 'members', '--nodes', '10.0.30.11']);

    expect(result.exitCode).toBe(0);
    expect(result.stdout.indexOf('talos_machine_configuration_apply.this["talos-prd-cp-3"]: Destroying...')).toBeLessThan(
      result.stdout.indexOf('proxmox_virtual_environment_vm.talos["talos-prd-cp-3"]: Destroying... [id=102]'),
    );
    expect(result.stdout).toContain('proxmox_virtual_environment_vm.talos["talos-prd-cp-3"]: Destruction complete after 6s\n');
    const node = f.sim.node('production', 'talos-prd-cp-3');
    expect(node).toMatchObject({ vmDestroyed: true, stage: 'off', k8sRegistered: true, etcdMember: true });
    expect(nodeReady(cluster, node)).toBe('Unknown');
    expect(parseEtcdMembers(members.stdout).map((m) => m.hostname)).toContain('talos-prd-cp-3');
    expect(f.sim.events.filter((e) => e.kind === 'vm-destroyed').map((e) => e.node)).toEqual(['10.0.30.13']);
  });

  it('leaves no trace of a node that was reset and deleted before its VM was destroyed', async ({ f, expect }) => {
    const worker = f.sim.node('staging', 'talos-stg-w-1');
    Object.assign(worker, { stage: 'off', discoveryMember: false, k8sRegistered: false, servicesStopped: true });
    await f.sim.terraform.removeNode('staging', 'talos-stg-w-1');
    await f.tofu('staging', ['plan', '-out=review.tfplan']);

    const result = await f.tofu('staging', ['apply', '-input=false', 'review.tfplan']);

    expect(result.exitCode).toBe(0);
    expect(f.sim.cluster('staging').nodes.map((n) => n.hostname)).toEqual(['talos-stg-cp-1']);
  });

  slowBoot(
    "records a replaced VM and replaced secrets; the lone control plane's new machine waits for an etcd that has no quorum",
    async ({ f, expect }) => {
      f.sim.faults.set('staging', { tofuPlan: 'replace-vm' });
      await f.sim.terraform.replaceSecrets('staging');
      await f.tofu('staging', ['plan', '-out=review.tfplan']);
      const before = f.sim.node('staging', 'talos-stg-cp-1').bootId;

      const result = await f.tofu('staging', ['apply', '-input=false', 'review.tfplan']);
      // Its old member is the only voter and is gone: addMember finds no leader and retries (reference/node-replacement.md).
      await f.sim.waitFor(() => f.sim.node('staging', 'talos-stg-cp-1').stage === 'booting', 5000, 'the replaced machine booting');
      await new Promise((r) => setTimeout(r, 300));

      expect(result.exitCode).toBe(0);
      expect(result.stdout).toContain('talos_machine_secrets.this: Destroying... [id=machine_secrets]\n');
      expect(f.sim.events.filter((e) => e.kind === 'secrets-replaced' || e.kind === 'vm-replaced').map((e) => [e.kind, e.detail])).toEqual([
        ['secrets-replaced', 'talos_machine_secrets.this'],
        ['vm-replaced', 'proxmox_virtual_environment_vm.talos["talos-stg-cp-1"]'],
      ]);
      expect(f.sim.node('staging', 'talos-stg-cp-1').bootId).not.toBe(before);
      expect(f.sim.node('staging', 'talos-stg-cp-1').stage).toBe('booting');
      expect(f.sim.events.some((e) => e.kind === 'etcd-learner-added' || (e.kind === 'up' && e.node === '10.0.20.204'))).toBe(false);
      expect(f.sim.node('staging', 'talos-stg-cp-1').staleMember?.etcdMemberId).toBeDefined();
    },
  );

  it('forgets the old secrets without destroying them, and creates the new VM before destroying the deposed one', async ({ f, expect }) => {
    await f.sim.terraform.setLifecycle('staging', 'talos_machine_secrets.this', { destroy: false });
    await f.sim.terraform.replaceSecrets('staging');
    await f.sim.terraform.setLifecycle('staging', 'proxmox_virtual_environment_vm.talos', { create_before_destroy: true });
    await f.sim.terraform.replaceVm('staging', 'talos-stg-w-1');
    await f.tofu('staging', ['plan', '-out=review.tfplan']);
    const oldSecrets = f.sim.cluster('staging').terraform.state.resources['talos_machine_secrets.this']?.attributes['machine_secrets'];

    const result = await f.tofu('staging', ['apply', '-input=false', 'review.tfplan']);

    expect(result.exitCode).toBe(0);
    // A forget prints nothing (views/hook_ui.go has no case for it): the secrets are only created anew.
    expect(result.stdout).not.toContain('talos_machine_secrets.this: Destroying');
    expect(result.stdout).toContain('talos_machine_secrets.this: Creating...\n');
    const vm = 'proxmox_virtual_environment_vm.talos["talos-stg-w-1"]';
    expect(result.stdout.indexOf(`${vm}: Creating...`)).toBeLessThan(result.stdout.indexOf(`${vm} (deposed object `));
    expect(result.stdout).toMatch(
      /proxmox_virtual_environment_vm\.talos\["talos-stg-w-1"\] \(deposed object [0-9a-f]{8}\): Destroying\.\.\. \[id=\d+\]\n/,
    );
    const state = f.sim.cluster('staging').terraform.state.resources;
    expect(state[vm]).toBeDefined();
    expect(state['talos_machine_secrets.this']?.attributes['machine_secrets']).not.toBe(oldSecrets);
    expect(f.sim.events.some((e) => e.kind === 'vm-destroyed')).toBe(false);
  });

  slowBoot(
    'adds a second control plane to a one-member etcd: a new machine leaves no member behind, so quorum holds',
    async ({ f, expect }) => {
      await f.sim.terraform.addNode('staging', { hostname: 'talos-stg-cp-2', address: '10.0.20.12', role: 'controlplane', host: 'pve1' });
      await f.tofu('staging', ['plan', '-out=review.tfplan']);

      await f.tofu('staging', ['apply', '-input=false', 'review.tfplan']);
      await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'etcd-learner-promoted'), 5000, 'the learner promoted');
      const members = await f.talosctl('staging', ['etcd', 'members', '--nodes', '10.0.20.204']);

      expect(
        parseEtcdMembers(members.stdout)
          .map((m) => [m.hostname, m.learner])
          .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      ).toEqual([
        ['talos-stg-cp-1', false],
        ['talos-stg-cp-2', false],
      ]);
      expect(f.sim.node('staging', 'talos-stg-cp-2').staleMember).toBeUndefined();
    },
  );

  slowBoot('keeps a stuck learner and a node that never gets Ready as the faults say', async ({ f, expect }) => {
    f.sim.faults.set('production', { etcdLearnerStuck: ['talos-prd-cp-4'], newNodeNeverReady: ['talos-prd-cp-4'] });
    await f.sim.terraform.addNode('production', NEW_CP);
    await f.tofu('production', ['plan', '-out=review.tfplan']);
    const cluster = f.sim.cluster('production');

    await f.tofu('production', ['apply', '-input=false', 'review.tfplan']);
    await f.sim.waitFor(() => f.sim.events.some((e) => e.kind === 'up' && e.node === '10.0.30.14'), 5000, 'the new node up');
    // Long past the promotion delay.
    await new Promise((r) => setTimeout(r, f.sim.timing.learnerPromoteMs * 2));
    const members = await f.talosctl('production', ['etcd', 'members', '--nodes', '10.0.30.12']);

    const node = f.sim.node('production', 'talos-prd-cp-4');
    expect(node.etcdLearner).toBe(true);
    expect(nodeReady(cluster, node)).toBe('False');
    expect(parseEtcdMembers(members.stdout).find((m) => m.hostname === 'talos-prd-cp-4')?.learner).toBe(true);
    expect(f.sim.events.some((e) => e.kind === 'etcd-learner-promoted')).toBe(false);
  });
});

const chatty = simTest({ timing: { tofuStillLines: 7 } });

describe('a chatty tofu apply', () => {
  chatty(
    "prints tofu's periodic 'Still modifying' lines for each resource, with its id and Go's durations, before it completes",
    async ({ f, expect }) => {
      await f.sim.terraform.changePatch('staging');
      await f.tofu('staging', ['plan', '-out=review.tfplan']);

      const result = await f.tofu('staging', ['apply', '-input=false', '-no-color', 'review.tfplan']);

      const address = 'talos_machine_configuration_apply.this["talos-stg-cp-1"]';
      const mine = result.stdout.split('\n').filter((l) => l.startsWith(`${address}: `));
      const id = /Modifying\.\.\. \[id=(.+)\]$/.exec(mine[0] ?? '')?.[1];
      expect(result.exitCode).toBe(0);
      expect(id).toBeDefined();
      expect(mine.slice(1, 8)).toEqual(
        ['10s', '20s', '30s', '40s', '50s', '1m0s', '1m10s'].map((t) => `${address}: Still modifying... [id=${id}, ${t} elapsed]`),
      );
      expect(mine[8]).toMatch(/: Modifications complete after /);
      expect(mine).toHaveLength(9);
    },
  );
});
