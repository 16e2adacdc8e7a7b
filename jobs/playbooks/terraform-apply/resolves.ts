import type { Disagreement } from '../../../src/cluster/estate.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { terraformData } from './data.ts';

/** The `for_each` key of a resource instance address: `proxmox_virtual_environment_vm.talos["talos-prd-w-4"]` → `talos-prd-w-4`. */
function keyOf(address: string): string | undefined {
  return /\["([^"]+)"\]$/.exec(address)?.[1];
}

/**
 * Whether this reviewed apply settles `d`: its plan changes a resource keyed by the node's hostname
 * (a Node Terraform does not declare yet, a VM that never joined and is configured again), or, for
 * a control plane the talosconfig does not list, it is an apply at all, since the talosconfig's
 * endpoints are an output of the configuration and change only through one. Anything else holds it.
 */
export function applyResolves(op: Operation, d: Disagreement): boolean {
  if (d.kind === 'control-plane-not-in-talosconfig') return true;
  if (d.kind !== 'node-undeclared' && d.kind !== 'terraform-node-not-joined') return false;
  const changes = terraformData(op).terraform?.changes ?? [];
  return d.node.name !== undefined && changes.some((c) => c.action !== 'no-op' && keyOf(c.address) === d.node.name);
}
