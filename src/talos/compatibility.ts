/**
 * Talos ⇄ Kubernetes support matrix and upgrade-path rules, from
 * `pkg/machinery/compatibility/talosXY` in siderolabs/talos. The bot and the
 * simulated cluster share this one table so that they can never disagree.
 */
export interface TalosMinorSupport {
  /** Talos minor, e.g. `1.11`. */
  talos: string;
  /** Lowest supported Kubernetes minor, e.g. `1.29`. */
  kubernetesMin: string;
  /** Highest supported Kubernetes minor, e.g. `1.34`. */
  kubernetesMax: string;
  /** Lowest running Talos version that may upgrade to this minor. */
  upgradeFromMin: string;
}

export const TALOS_SUPPORT_MATRIX: readonly TalosMinorSupport[] = [
  { talos: '1.8', kubernetesMin: '1.26', kubernetesMax: '1.31', upgradeFromMin: '1.5.0' },
  { talos: '1.9', kubernetesMin: '1.27', kubernetesMax: '1.32', upgradeFromMin: '1.8.0' },
  { talos: '1.10', kubernetesMin: '1.28', kubernetesMax: '1.33', upgradeFromMin: '1.8.0' },
  { talos: '1.11', kubernetesMin: '1.29', kubernetesMax: '1.34', upgradeFromMin: '1.9.0' },
  { talos: '1.12', kubernetesMin: '1.30', kubernetesMax: '1.35', upgradeFromMin: '1.10.0' },
  { talos: '1.13', kubernetesMin: '1.31', kubernetesMax: '1.36', upgradeFromMin: '1.11.0' },
  { talos: '1.14', kubernetesMin: '1.32', kubernetesMax: '1.37', upgradeFromMin: '1.12.0' },
];

/** `1.11.6` or `v1.11.6` → `1.11`. */
export function minorOf(version: string): string {
  const [major, minor] = version.replace(/^v/, '').split('.');
  return `${major}.${minor}`;
}

function minorNumber(minor: string): number {
  const [, m] = minor.split('.');
  return Number(m);
}

export function supportFor(talosVersion: string): TalosMinorSupport | undefined {
  const minor = minorOf(talosVersion);
  return TALOS_SUPPORT_MATRIX.find((row) => row.talos === minor);
}

/** Whether the Talos release `talosVersion` supports Kubernetes `kubernetesVersion`. */
export function talosSupportsKubernetes(talosVersion: string, kubernetesVersion: string): boolean {
  const row = supportFor(talosVersion);
  if (!row) return false;
  const k = minorNumber(minorOf(kubernetesVersion));
  return k >= minorNumber(row.kubernetesMin) && k <= minorNumber(row.kubernetesMax);
}
