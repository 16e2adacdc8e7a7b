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

/** The resource type that applies a node's Talos machine configuration (siderolabs/terraform-provider-talos). */
export const CONFIG_APPLY_TYPE = 'talos_machine_configuration_apply';

const CONFIG_APPLY_ADDRESS = /^(?:module\.[A-Za-z0-9_-]+(?:\[[^\]]+\])?\.)*talos_machine_configuration_apply\.[A-Za-z0-9_-]+\["([^"]+)"\]$/;

/**
 * The state address of the `talos_machine_configuration_apply` keyed by `hostname`: the resource that
 * configures the VM of that name once it boots. Undefined when the state holds none, or more than one.
 */
export function configApplyOf(stateList: string, hostname: string): string | undefined {
  const matches = stateList
    .split('\n')
    .map((line) => line.trim())
    .filter((address) => CONFIG_APPLY_ADDRESS.exec(address)?.[1] === hostname);
  return matches.length === 1 ? matches[0] : undefined;
}
