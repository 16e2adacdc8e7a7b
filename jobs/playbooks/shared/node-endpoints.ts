import type { ClusterConfig } from '../../../src/config/inventory.ts';

/**
 * Endpoints for a call that concerns `node`: the other control planes, so the
 * request never travels through the node that is about to reboot (upgrades are known
 * to hang otherwise). A single-control-plane cluster has no other.
 */
export function endpointsAvoiding(cluster: ClusterConfig, node: string): string[] {
  const others = cluster.controlPlanes.filter((cp) => cp !== node);
  return others.length > 0 ? others : cluster.controlPlanes;
}

/** Whether talosctl can reach `node` through another control plane while it reboots; the only control plane cannot. */
export function hasOtherEndpoint(cluster: ClusterConfig, node: string): boolean {
  return cluster.controlPlanes.some((cp) => cp !== node);
}
