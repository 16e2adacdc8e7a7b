/** Writes a `clusters.yaml` in the inventory format of DESIGN.md for the simulated clusters. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Simulator } from './simulator.ts';

export interface InventoryOptions {
  /** Maintenance channel per cluster. Default `C0MAINTSTG` / `C0MAINTPRD`, else `C0MAINT<NAME>`. */
  channels?: Record<string, string>;
  /** Operators: one list for every cluster, or per cluster. Default `[U0ALICE, U0BOB]`. */
  operators?: string[] | Record<string, string[]>;
  /** Approvers: one list for every cluster, or per cluster. Default `[U0CAROL]`. */
  approvers?: string[] | Record<string, string[]>;
  /** Clusters marked `defaultForChannel: true`. Default: every cluster. */
  defaultForChannel?: string[];
  /** Only these clusters. Default: all simulated clusters. */
  clusters?: string[];
  /** Where to write. Default `<sim dir>/clusters.yaml`. */
  path?: string;
  /**
   * Clusters whose entry leaves out `controlPlanes`, `workers` and `nodeNames`: the bot then finds the
   * nodes itself. `true`: every cluster. Default: each entry lists the simulated nodes.
   */
  withoutNodeLists?: true | string[];
  /** Fields merged into each cluster's entry, keyed by cluster. */
  extra?: Record<string, Record<string, unknown>>;
}

function perCluster(value: string[] | Record<string, string[]> | undefined, cluster: string, fallback: string[]): string[] {
  if (!value) return fallback;
  return Array.isArray(value) ? value : (value[cluster] ?? fallback);
}

function defaultChannel(name: string): string {
  if (name === 'staging') return 'C0MAINTSTG';
  if (name === 'production') return 'C0MAINTPRD';
  return `C0MAINT${name.toUpperCase().replace(/[^A-Z0-9]/g, '')}`;
}

export async function writeInventory(sim: Simulator, options: InventoryOptions = {}): Promise<string> {
  const names = options.clusters ?? Object.keys(sim.state.clusters);
  const clusters: Record<string, unknown> = {};
  for (const name of names) {
    const cluster = sim.cluster(name);
    const unlisted = options.withoutNodeLists === true || (options.withoutNodeLists?.includes(name) ?? false);
    const lists = {
      controlPlanes: cluster.nodes.filter((n) => n.role === 'controlplane').map((n) => n.address),
      workers: cluster.nodes.filter((n) => n.role === 'worker').map((n) => n.address),
      nodeNames: Object.fromEntries(cluster.nodes.map((n) => [n.address, n.hostname])),
    };
    clusters[name] = {
      environment: cluster.environment,
      channel: options.channels?.[name] ?? defaultChannel(name),
      terraformDir: cluster.terraformDir,
      ...(unlisted ? {} : { controlPlanes: lists.controlPlanes, workers: lists.workers }),
      installerPlatform: cluster.terraform.installerPlatform,
      hostLabel: cluster.shape.hostLabel ?? 'example.org/proxmox-host',
      snapshotDir: cluster.snapshotDir,
      operators: perCluster(options.operators, name, ['U0ALICE', 'U0BOB']),
      approvers: perCluster(options.approvers, name, ['U0CAROL']),
      defaultForChannel: options.defaultForChannel ? options.defaultForChannel.includes(name) : true,
      ...(unlisted ? {} : { nodeNames: lists.nodeNames }),
      ...options.extra?.[name],
    };
  }
  const path = options.path ?? join(sim.dir, 'clusters.yaml');
  await writeFile(path, stringify({ clusters }), 'utf8');
  return path;
}
