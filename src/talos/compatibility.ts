/**
 * Talos ⇄ Kubernetes support matrix and upgrade-path rules, from
 * `pkg/machinery/compatibility/talosXY` in siderolabs/talos. The bot and the
 * simulated cluster share this built-in table so that they can never disagree; the operator
 * extends it with the inventory's `talosSupport` (see {@link mergeSupportTable}), so a Talos
 * minor released after the image needs no new image.
 */
import type { Inventory } from '../config/inventory.ts';
import type { TalosMinorSupport } from '../config/talos-support.ts';

export type { TalosMinorSupport };

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

/** The support table the bot works with, when no inventory extends it. */
export type SupportTable = readonly TalosMinorSupport[];

export function supportFor(talosVersion: string, table: SupportTable = TALOS_SUPPORT_MATRIX): TalosMinorSupport | undefined {
  const minor = minorOf(talosVersion);
  return table.find((row) => row.talos === minor);
}

/** Whether the Talos release `talosVersion` supports Kubernetes `kubernetesVersion`. */
export function talosSupportsKubernetes(
  talosVersion: string,
  kubernetesVersion: string,
  table: SupportTable = TALOS_SUPPORT_MATRIX,
): boolean {
  const row = supportFor(talosVersion, table);
  if (!row) return false;
  const k = minorNumber(minorOf(kubernetesVersion));
  return k >= minorNumber(row.kubernetesMin) && k <= minorNumber(row.kubernetesMax);
}

/**
 * The built-in table with the operator's rows over it: a row for a minor the table knows replaces
 * that row (a correction), any other adds a minor. Sorted by minor.
 */
export function mergeSupportTable(extra: readonly TalosMinorSupport[] | undefined): SupportTable {
  if (extra === undefined || extra.length === 0) return TALOS_SUPPORT_MATRIX;
  const byMinor = new Map(TALOS_SUPPORT_MATRIX.map((row) => [row.talos, row]));
  for (const row of extra) byMinor.set(row.talos, row);
  const key = (minor: string): [number, number] => minor.split('.').map(Number) as [number, number];
  return [...byMinor.values()].sort((a, b) => key(a.talos)[0] - key(b.talos)[0] || key(a.talos)[1] - key(b.talos)[1]);
}

/** Sidero's support matrix of a Talos minor: the page that says which Kubernetes it supports and what it upgrades from. */
export function talosSupportMatrixUrl(version: string): string {
  return `https://docs.siderolabs.com/talos/v${minorOf(version)}/getting-started/support-matrix`;
}

/**
 * What to add to the inventory for a Talos minor the table does not know: the YAML lines, filled
 * in as the newest known minor's row would continue (one Kubernetes minor up at each end, an
 * upgrade from two Talos minors back), to be checked against the support matrix before use.
 */
export function supportRowToAdd(minor: string, table: SupportTable = TALOS_SUPPORT_MATRIX): string {
  const [major, m] = minor.split('.').map(Number) as [number, number];
  const previous = table.find((row) => row.talos === `${major}.${m - 1}`) ?? table.at(-1);
  const bump = (k: string, by: number): string => {
    const [kMajor, kMinor] = k.split('.').map(Number) as [number, number];
    return `${kMajor}.${kMinor + by}`;
  };
  const steps = previous === undefined ? 1 : m - Number(previous.talos.split('.')[1]);
  const kubernetesMin = previous === undefined ? '1.xx' : bump(previous.kubernetesMin, steps);
  const kubernetesMax = previous === undefined ? '1.xx' : bump(previous.kubernetesMax, steps);
  return [
    'talosSupport:',
    `  - talos: "${minor}"`,
    `    kubernetesMin: "${kubernetesMin}"`,
    `    kubernetesMax: "${kubernetesMax}"`,
    `    upgradeFromMin: "${major}.${Math.max(m - 2, 0)}.0"`,
  ].join('\n');
}

/** Slack's code block, so the lines keep their indentation and copy as they are. */
const FENCE = '```';

/** The refusal for a Talos minor the table does not know: what is missing, where to read, and exactly what to add. */
export function unknownMinorRefusal(minor: string, table: SupportTable = TALOS_SUPPORT_MATRIX): string {
  const known = table.map((r) => r.talos).join(', ');
  return (
    `Talos ${minor} is not in the bot's support table (${known}), so its Kubernetes support and upgrade path cannot be checked. ` +
    `Read its support matrix (${talosSupportMatrixUrl(`${minor}.0`)}), then add its row at the top level of the inventory (CLUSTERS_FILE), ` +
    `with the values the matrix gives (these follow the pattern of the earlier minors):\n${FENCE}\n${supportRowToAdd(minor, table)}\n${FENCE}\n` +
    'The bot reads the inventory again on its own (CLUSTERS_RELOAD_SECONDS); no new image is needed. Then ask again (Check again)'
  );
}

/** The support table the rules use for `inventory`: the built-in one with its `talosSupport` rows over it. */
export function supportTable(inventory: Pick<Inventory, 'talosSupport'>): SupportTable {
  return mergeSupportTable(inventory.talosSupport);
}
