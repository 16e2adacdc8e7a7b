import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe } from 'vitest';
import { simTest } from './sim-fixture.ts';

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
    const json = JSON.parse(show.stdout) as { format_version: string; resource_changes: { address: string; change: { actions: string[] } }[] };
    expect(json.format_version).toBe('1.2');
    expect(json.resource_changes.find((c) => c.address === 'talos_machine_secrets.this')?.change.actions).toEqual(['delete', 'create']);
    expect(json.resource_changes.filter((c) => c.change.actions.join() === 'no-op').length).toBeGreaterThan(3);
    expect(existsSync(join(f.sim.cluster('production').terraformDir, 'review.tfplan'))).toBe(true);
  });

  it('marks a VM replacement and plan errors', async ({ f, expect }) => {
    f.sim.faults.set('staging', { tofuPlan: 'replace-vm' });
    await f.tofu('staging', ['plan', '-out=vm.tfplan', '-detailed-exitcode']);
    const show = JSON.parse((await f.tofu('staging', ['show', '-json', 'vm.tfplan'])).stdout) as { resource_changes: { type: string; change: { actions: string[] } }[] };
    f.sim.faults.set('staging', { tofuPlan: 'error' });
    const failed = await f.tofu('staging', ['plan', '-detailed-exitcode']);

    expect(show.resource_changes.filter((c) => c.type === 'proxmox_virtual_environment_vm').map((c) => c.change.actions)).toEqual([['delete', 'create'], ['no-op']]);
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
