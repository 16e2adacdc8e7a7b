import { errorText } from '../../../src/chat/error-text.ts';
import { parseServiceInfo } from '../../../src/talos/parse-service.ts';
import { probeSignal } from '../../engine/walk.ts';
import type { WalkContext } from '../../engine/playbook.ts';

/** etcd's service on one control plane as `talosctl service etcd` shows it, or why it could not be read (a node rebooting). */
export type EtcdService = { read: true; state: string; health: string } | { read: false; error: string };

/**
 * `talosctl -n <node> --endpoints <node> service etcd`: asked of the node itself, as every other
 * control plane may be down too. After a reset that wiped EPHEMERAL, etcd waits for a bootstrap in
 * `Preparing` (Talos's disaster-recovery guide, website/content/v1.11/advanced/disaster-recovery.md).
 */
export async function etcdService(ctx: WalkContext, node: string): Promise<EtcdService> {
  try {
    const result = await ctx.talosctl.run(['service', 'etcd'], [node], { signal: probeSignal(ctx), endpoints: [node] });
    const info = parseServiceInfo(result.stdout)[0];
    if (info === undefined) return { read: false, error: 'talosctl printed no service' };
    return { read: true, state: info.state, health: info.health };
  } catch (error) {
    if (ctx.signal?.aborted) throw error;
    return { read: false, error: errorText(error) };
  }
}

/** `Preparing` as a person reads it in a wait: the node's etcd waits for the bootstrap. */
export function serviceWords(node: string, service: EtcdService): string {
  return service.read
    ? `${node}: etcd ${service.state}${service.health === '?' ? '' : ` (${service.health})`}`
    : `${node}: ${service.error}`;
}
