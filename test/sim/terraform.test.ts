import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe } from 'vitest';
import { simTest } from './sim-fixture.ts';

const it = simTest();

describe.concurrent('the Terraform repository', () => {
  it('holds both cluster roots in one commit, with declared inputs equal to the applied state', async ({ f, expect }) => {
    const { terraform } = f.sim;

    const files = (await terraform.git(['ls-tree', '-r', '--name-only', 'HEAD'])).split('\n');
    const log = (await terraform.git(['log', '--format=%H'])).split('\n');
    const status = await terraform.git(['status', '--porcelain']);

    expect(files).toEqual(
      expect.arrayContaining([
        '.gitignore',
        'production/cluster.auto.tfvars.json',
        'production/main.tf',
        'staging/cluster.auto.tfvars.json',
        'staging/main.tf',
      ]),
    );
    expect(log).toEqual([await terraform.head()]);
    expect(status).toBe('');
    expect(terraform.declared('production')).toEqual(f.sim.cluster('production').terraform.applied);
    expect(terraform.declared('staging')).toEqual({
      talos_version: 'v1.11.6',
      talos_kubernetes_version: 'v1.34.1',
      talos_config_patch_revision: 1,
      talos_secrets_generation: 1,
      talos_nodes: {
        'talos-stg-cp-1': { address: '10.0.20.204', role: 'controlplane', host: 'pve5', longhorn: false, vm_generation: 1 },
        'talos-stg-w-1': { address: '10.0.20.205', role: 'worker', host: 'pve5', longhorn: false, vm_generation: 1 },
      },
      lifecycle: {
        'talos_machine_configuration_apply.this': { replace_triggered_by: ['proxmox_virtual_environment_vm.talos[each.key]'] },
      },
    });
  });

  it('shows a declared change as a dirty working tree until it is committed', async ({ f, expect }) => {
    const { terraform } = f.sim;
    const before = await terraform.head();

    await terraform.setTalosVersion('production', 'v1.12.11');
    const dirty = await terraform.git(['status', '--porcelain']);
    const sha = await terraform.commit('production: talos_version v1.12.11');
    const clean = await terraform.git(['status', '--porcelain']);

    expect(dirty).toBe(' M production/cluster.auto.tfvars.json');
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    expect(sha).not.toBe(before);
    expect(await terraform.head()).toBe(sha);
    expect(clean).toBe('');
    expect(await terraform.git(['show', '-s', '--format=%an <%ae> %s', sha])).toBe(
      'Simulated Operator <operator@example.org> production: talos_version v1.12.11',
    );
    expect(JSON.parse(await readFile(join(f.sim.cluster('production').terraformDir, 'cluster.auto.tfvars.json'), 'utf8'))).toMatchObject({
      talos_version: 'v1.12.11',
    });
  });

  it('edits the declared inputs with one helper per runbook change', async ({ f, expect }) => {
    const { terraform } = f.sim;

    await terraform.addNode('production', {
      hostname: 'talos-prd-cp-4',
      address: '10.0.30.14',
      role: 'controlplane',
      host: 'pve4',
      longhorn: true,
    });
    await terraform.removeNode('production', 'talos-prd-cp-3');
    await terraform.changePatch('production');
    await terraform.replaceSecrets('production');
    await terraform.replaceVm('production', 'talos-prd-cp-2');
    await terraform.setKubernetesVersion('production', 'v1.35.0');
    const declared = terraform.declared('production');

    expect(Object.keys(declared.talos_nodes)).toEqual(['talos-prd-cp-1', 'talos-prd-cp-2', 'talos-prd-cp-4']);
    expect(declared.talos_nodes['talos-prd-cp-4']).toEqual({
      address: '10.0.30.14',
      role: 'controlplane',
      host: 'pve4',
      longhorn: true,
      vm_generation: 1,
    });
    expect(declared.talos_nodes['talos-prd-cp-2']?.vm_generation).toBe(2);
    expect(declared).toMatchObject({ talos_config_patch_revision: 2, talos_secrets_generation: 2, talos_kubernetes_version: 'v1.35.0' });
    await expect(
      terraform.addNode('production', { hostname: 'talos-prd-cp-1', address: '10.0.30.11', role: 'controlplane', host: 'pve1' }),
    ).rejects.toThrow('already declares talos-prd-cp-1');
    expect(terraform.declared('staging')).toEqual(f.sim.cluster('staging').terraform.applied);
  });

  it('counts state writes and lets another operator touch the state', async ({ f, expect }) => {
    const { terraform } = f.sim;
    const start = terraform.serial('staging');

    terraform.touchState('staging');

    expect(terraform.serial('staging')).toBe(start + 1);
    expect(terraform.serial('production')).toBe(f.sim.cluster('production').terraform.state.serial);
  });

  it('keeps saved plans out of the repository', async ({ f, expect }) => {
    await f.sim.terraform.changePatch('staging');
    await f.sim.terraform.commit('staging: machine-config patch');

    const plan = await f.tofu('staging', ['plan', '-out=review.tfplan']);

    expect(plan.exitCode).toBe(0);
    expect(await f.sim.terraform.git(['status', '--porcelain'])).toBe('');
  });
});
