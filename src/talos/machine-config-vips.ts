import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { getOnEachNode } from './observe.ts';
import type { Talosctl } from './talosctl.ts';

/**
 * The part of a v1alpha1 machine configuration that names Layer 2 virtual IPs:
 * `machine.network.interfaces[].vip.ip` and the same on a VLAN (DeviceVIPConfig,
 * pkg/machinery/config/types/v1alpha1/v1alpha1_types.go, siderolabs/talos v1.13.9).
 */
const Vip = z.object({ vip: z.object({ ip: z.string() }).optional() });
const Interface = Vip.extend({ vlans: z.array(Vip).optional() });
const V1Alpha1 = z.object({
  machine: z.object({ network: z.object({ interfaces: z.array(Interface).optional() }).optional() }).optional(),
});

/**
 * Since Talos 1.12 the same address can be its own document (pkg/machinery/config/types/network,
 * `Layer2VIPConfig`, siderolabs/talos v1.13.9): `kind: Layer2VIPConfig`, the address as its `name`.
 */
const Layer2Vip = z.object({ kind: z.literal('Layer2VIPConfig'), name: z.string() });

/** The virtual IPs one configuration document set declares, in order. */
export function vipsInMachineConfig(spec: unknown): string[] {
  // The MachineConfig resource's spec is its configuration's own YAML bytes (MarshalYAMLBytes,
  // pkg/machinery/resources/config/machine_config.go, v1.13.9): a string of documents.
  const documents =
    typeof spec === 'string' ? parseAllDocuments(spec).flatMap((d) => (d.errors.length > 0 ? [] : [d.toJS() as unknown])) : [spec];
  const vips: string[] = [];
  for (const document of documents) {
    const layer2 = Layer2Vip.safeParse(document);
    if (layer2.success) {
      vips.push(layer2.data.name);
      continue;
    }
    const parsed = V1Alpha1.safeParse(document);
    if (!parsed.success) continue;
    for (const link of parsed.data.machine?.network?.interfaces ?? [])
      for (const holder of [link, ...(link.vlans ?? [])]) if (holder.vip !== undefined) vips.push(holder.vip.ip);
  }
  return vips;
}

export type NodeVips = { vips: string[] } | { unread: string };

/**
 * Each control plane's declared virtual IPs, from `talosctl get machineconfig`. Only the addresses
 * leave this function: the configuration also holds the cluster's keys.
 */
export async function controlPlaneVips(talosctl: Talosctl, controlPlanes: string[], signal: AbortSignal): Promise<Map<string, NodeVips>> {
  const answers = await getOnEachNode(talosctl, 'machineconfig', controlPlanes, { signal });
  const out = new Map<string, NodeVips>();
  for (const [address, answer] of answers) {
    if (!answer.reachable) out.set(address, { unread: answer.error });
    else out.set(address, { vips: answer.items.filter((i) => i.metadata.id === 'v1alpha1').flatMap((i) => vipsInMachineConfig(i.spec)) });
  }
  return out;
}
