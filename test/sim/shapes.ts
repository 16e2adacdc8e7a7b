/** The two cluster shapes of the runbook. Tests may pass their own shapes instead. */
import type { ClusterShape } from './types.ts';

/** One control plane and one worker on PVE5, no Longhorn: the checked-in staging inventory. */
export function stagingShape(overrides: Partial<ClusterShape> = {}): ClusterShape {
  return {
    name: 'staging',
    environment: 'staging',
    talosVersion: 'v1.11.6',
    kubernetesVersion: 'v1.34.1',
    nodes: [
      { hostname: 'talos-stg-cp-1', address: '10.0.20.204', role: 'controlplane', host: 'pve5' },
      { hostname: 'talos-stg-w-1', address: '10.0.20.205', role: 'worker', host: 'pve5' },
    ],
    endpoints: ['10.0.20.204'],
    kubernetesEndpoint: 'https://10.0.20.204:6443',
    longhorn: false,
    schedulingOnControlPlanes: false,
    // Staging is built from production's default schematic, so its upgrades rehearse the same installer image; it has no Longhorn class.
    defaultExtensions: ['siderolabs/iscsi-tools', 'siderolabs/util-linux-tools'],
    fluxPath: './clusters/staging',
    installerPlatform: 'nocloud',
    ...overrides,
  };
}

/**
 * Three hyperconverged control planes on three Proxmox hosts behind a VIP, with Longhorn (ADR
 * 007/008). The runbook's production gates build every node's image with iscsi-tools and
 * util-linux-tools, so the default schematic carries both; every node holds Longhorn replicas.
 * The Longhorn installer output (`talos_longhorn_installer_image`) is for Longhorn workers only:
 * its schematic is another one (here the default's extensions plus the guest agent), and a
 * test adds such a worker with `installer: 'longhorn'`.
 */
export function productionShape(overrides: Partial<ClusterShape> = {}): ClusterShape {
  return {
    name: 'production',
    environment: 'production',
    talosVersion: 'v1.11.6',
    kubernetesVersion: 'v1.34.1',
    nodes: [
      { hostname: 'talos-prd-cp-1', address: '10.0.30.11', role: 'controlplane', host: 'pve1', longhorn: true },
      { hostname: 'talos-prd-cp-2', address: '10.0.30.12', role: 'controlplane', host: 'pve2', longhorn: true },
      { hostname: 'talos-prd-cp-3', address: '10.0.30.13', role: 'controlplane', host: 'pve3', longhorn: true },
    ],
    vip: '10.0.30.10',
    endpoints: ['10.0.30.11', '10.0.30.12', '10.0.30.13'],
    kubernetesEndpoint: 'https://10.0.30.10:6443',
    longhorn: true,
    schedulingOnControlPlanes: true,
    defaultExtensions: ['siderolabs/iscsi-tools', 'siderolabs/util-linux-tools'],
    longhornExtensions: ['siderolabs/iscsi-tools', 'siderolabs/qemu-guest-agent', 'siderolabs/util-linux-tools'],
    fluxPath: './clusters/production',
    installerPlatform: 'nocloud',
    ...overrides,
  };
}

/** The control-plane addresses of the three-control-plane staging. */
export const STAGING_THREE_CPS = ['10.0.20.201', '10.0.20.202', '10.0.20.203'] as const;

/**
 * Staging in the shape the runbook's production gates give it before its rehearsals: three control planes with Longhorn,
 * as production has, on staging's addresses (an etcd restore rehearses on it what production would go through).
 */
export function stagingThreeShape(): ClusterShape {
  return productionShape({
    name: 'staging',
    environment: 'staging',
    nodes: STAGING_THREE_CPS.map((address, i) => ({
      hostname: `talos-stg-cp-${i + 1}`,
      address,
      role: 'controlplane',
      host: `pve${i + 1}`,
      longhorn: true,
    })),
    vip: '10.0.20.200',
    endpoints: [...STAGING_THREE_CPS],
    kubernetesEndpoint: 'https://10.0.20.200:6443',
    fluxPath: './clusters/staging',
  });
}
