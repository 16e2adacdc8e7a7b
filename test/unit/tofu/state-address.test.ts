import { describe, expect, it } from 'vitest';
import { configApplyOf, vmAddressOf, vmsInState } from '../../../src/tofu/state-address.ts';

const STATE = [
  'data.talos_client_configuration.this',
  'proxmox_virtual_environment_vm.talos["talos-prd-cp-1"]',
  'proxmox_virtual_environment_vm.talos["talos-prd-cp-2"]',
  'talos_machine_configuration_apply.this["talos-prd-cp-2"]',
  'talos_machine_secrets.this',
  '',
].join('\n');

describe('vmAddressOf', () => {
  it('finds the one VM keyed by the hostname', () => {
    expect(vmAddressOf(STATE, 'talos-prd-cp-2')).toEqual({ ok: true, address: 'proxmox_virtual_environment_vm.talos["talos-prd-cp-2"]' });
  });

  it('finds a VM inside a module', () => {
    const state = 'module.cluster.proxmox_virtual_environment_vm.node["talos-w-1"]\n';
    expect(vmAddressOf(state, 'talos-w-1')).toEqual({
      ok: true,
      address: 'module.cluster.proxmox_virtual_environment_vm.node["talos-w-1"]',
    });
  });

  it('refuses a hostname no VM is keyed by, naming the VMs the state holds', () => {
    const found = vmAddressOf(STATE, 'talos-prd-cp-9');
    expect(found.ok).toBe(false);
    expect(!found.ok && found.reason).toContain(
      'VMs in the state: proxmox_virtual_environment_vm.talos["talos-prd-cp-1"], proxmox_virtual_environment_vm.talos["talos-prd-cp-2"]',
    );
  });

  it('refuses two VMs keyed by the same hostname', () => {
    const state = `${STATE}\nproxmox_virtual_environment_vm.spare["talos-prd-cp-2"]\n`;
    const found = vmAddressOf(state, 'talos-prd-cp-2');
    expect(found.ok).toBe(false);
    expect(!found.ok && found.reason).toContain('2 VMs in the Terraform state are keyed "talos-prd-cp-2"');
  });

  it('does not take another resource of the same key, or a VM counted by index, for the VM', () => {
    expect(vmsInState('talos_machine_configuration_apply.this["a"]\nproxmox_virtual_environment_vm.talos[0]\n')).toEqual([]);
  });
});

describe('configApplyOf', () => {
  it('finds the configuration apply keyed by the hostname, in a module too', () => {
    expect(configApplyOf(STATE, 'talos-prd-cp-2')).toBe('talos_machine_configuration_apply.this["talos-prd-cp-2"]');
    expect(configApplyOf('module.c.talos_machine_configuration_apply.node["w-1"]\n', 'w-1')).toBe(
      'module.c.talos_machine_configuration_apply.node["w-1"]',
    );
  });

  it('finds none for a node without one, or when two are keyed alike', () => {
    expect(configApplyOf(STATE, 'talos-prd-cp-1')).toBeUndefined();
    expect(configApplyOf(`${STATE}talos_machine_configuration_apply.other["talos-prd-cp-2"]\n`, 'talos-prd-cp-2')).toBeUndefined();
  });
});
