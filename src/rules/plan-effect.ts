import type { ClusterConfig } from '../config/inventory.ts';
import type { PlanReview } from '../tofu/parse-plan.ts';

const CONFIG_APPLY = 'talos_machine_configuration_apply';
const VM = 'proxmox_virtual_environment_vm';

/**
 * Whether applying a node's configuration reboots it, by the Talos provider's `apply_mode`
 * (siderolabs/terraform-provider-talos docs/resources/machine_configuration_apply.md): `auto`, the
 * default, reboots only when the change needs it; `reboot` always does; `no_reboot` never (it fails
 * instead); `staged` waits for the next reboot.
 */
export type RebootMode = 'may' | 'will' | 'no' | 'staged';

/** What applying a plan does to the cluster's nodes, for the reviewer: which nodes, in which role, all at once. */
export interface PlanEffect {
  /** Nodes whose Talos configuration the plan applies again (an update of their configuration apply), by role. */
  configured: { controlPlanes: string[]; workers: string[]; unknown: string[]; reboot: RebootMode };
  /** The cluster's control planes, counted: "all 3 control planes at once" is the risk to name. */
  controlPlaneCount: number;
  created: string[];
  replaced: string[];
  destroyed: string[];
}

function rebootOf(modes: (string | undefined)[]): RebootMode {
  if (modes.includes('reboot')) return 'will';
  if (modes.some((m) => m === undefined || m === 'auto')) return 'may';
  if (modes.includes('staged')) return 'staged';
  return 'no';
}

/**
 * The effect of a reviewed plan on the nodes. tofu applies independent resources in parallel (up to
 * `-parallelism`, 10 by default), so every node whose configuration the plan updates gets it at once.
 */
export function planEffect(review: PlanReview, cluster: Pick<ClusterConfig, 'controlPlanes' | 'workers' | 'nodeNames'>): PlanEffect {
  const addressOf = new Map(Object.entries(cluster.nodeNames ?? {}).map(([address, name]) => [name, address]));
  const applies = review.changes.filter((c) => c.type === CONFIG_APPLY && c.action === 'update' && c.key !== undefined);
  const configured: PlanEffect['configured'] = {
    controlPlanes: [],
    workers: [],
    unknown: [],
    reboot: rebootOf(applies.map((c) => c.applyMode)),
  };
  for (const change of applies) {
    const name = change.key!;
    const address = addressOf.get(name) ?? name;
    if (cluster.controlPlanes.includes(address)) configured.controlPlanes.push(name);
    else if (cluster.workers.includes(address)) configured.workers.push(name);
    else configured.unknown.push(name);
  }
  const vms = (actions: string[]): string[] =>
    review.changes.filter((c) => c.type === VM && actions.includes(c.action) && c.key !== undefined).map((c) => c.key!);
  return {
    configured,
    controlPlaneCount: cluster.controlPlanes.length,
    created: vms(['create']),
    replaced: vms(['replace', 'forget-replace']),
    destroyed: vms(['delete']),
  };
}
