import { z } from 'zod';
import { getOnEachNode } from './observe.ts';
import type { Talosctl } from './talosctl.ts';

/** The part of a VolumeStatus (pkg/machinery/resources/block/volume_status.go, siderolabs/talos v1.13.9) the check reads. */
const VolumeStatusSpec = z.object({ type: z.string() });

/**
 * Each named node's user volumes by name (`u-<name>` without its prefix) and type, as `talosctl get
 * volumestatus` reports them; an unread node maps every volume to why. Asked through `endpoints`
 * when given (the control planes themselves), else through the talosconfig's.
 */
export async function userVolumeTypes(
  talosctl: Talosctl,
  addresses: string[],
  signal: AbortSignal,
  endpoints?: string[],
): Promise<Map<string, Map<string, string> | { unread: string }>> {
  const answers = await getOnEachNode(talosctl, 'volumestatus', addresses, { signal, endpoints });
  const out = new Map<string, Map<string, string> | { unread: string }>();
  for (const [address, answer] of answers) {
    if (!answer.reachable) {
      out.set(address, { unread: answer.error });
      continue;
    }
    const types = new Map<string, string>();
    for (const item of answer.items) {
      const spec = VolumeStatusSpec.safeParse(item.spec);
      if (item.metadata.id.startsWith('u-') && spec.success) types.set(item.metadata.id.slice(2), spec.data.type);
    }
    out.set(address, types);
  }
  return out;
}
