/** The resource type of a Talos VM in the runbook's configuration. */
export const VM_TYPE = 'proxmox_virtual_environment_vm';

/** A VM's address in `tofu state list`, with its module path if any: `module.x.proxmox_virtual_environment_vm.talos["talos-prd-cp-2"]`. */
const VM_ADDRESS = /^(?:module\.[A-Za-z0-9_-]+(?:\[[^\]]+\])?\.)*proxmox_virtual_environment_vm\.[A-Za-z0-9_-]+\["([^"]+)"\]$/;

/** The Talos VMs `tofu state list` names, each with its `for_each` key (the runbook keys VMs by hostname). */
export function vmsInState(stateList: string): { address: string; key: string }[] {
  return stateList
    .split('\n')
    .map((line) => line.trim())
    .flatMap((address) => {
      const key = VM_ADDRESS.exec(address)?.[1];
      return key === undefined ? [] : [{ address, key }];
    });
}

/**
 * The state address of the VM of `hostname`: exactly one VM keyed by it, or why not, naming what
 * the state holds so the operator can tell a renamed key from a missing VM.
 */
export function vmAddressOf(stateList: string, hostname: string): { ok: true; address: string } | { ok: false; reason: string } {
  const vms = vmsInState(stateList);
  const matches = vms.filter((vm) => vm.key === hostname);
  if (matches.length === 1) return { ok: true, address: matches[0]!.address };
  const listed =
    vms.length === 0
      ? 'none'
      : vms
          .slice(0, 10)
          .map((vm) => vm.address)
          .join(', ') + (vms.length > 10 ? ', …' : '');
  if (matches.length === 0)
    return { ok: false, reason: `no Talos VM in the Terraform state is keyed ${JSON.stringify(hostname)} (VMs in the state: ${listed})` };
  return {
    ok: false,
    reason: `${matches.length} VMs in the Terraform state are keyed ${JSON.stringify(hostname)} (${matches.map((m) => m.address).join(', ')}), so which one to replace is not clear`,
  };
}
