import type { NodeVips } from '../../talos/machine-config-vips.ts';
import type { Observed, ReadinessGate } from '../gate-result.ts';

/** One line per control plane: what its machine configuration declares, or why it was not read. */
export function vipEvidence(vips: Map<string, NodeVips>): string[] {
  return [...vips].map(([node, read]) =>
    'unread' in read
      ? `${node}  machine configuration unread: ${read.unread}`
      : `${node}  machine.network.interfaces[].vip.ip: ${read.vips.length > 0 ? read.vips.join(', ') : '<none>'}`,
  );
}

const HOW = "set machine.network.interfaces[].vip.ip to it in every control plane's machine configuration";

/**
 * An endpoint that is no node's address is a virtual IP only when Talos says so: every control
 * plane's machine configuration (`talosctl get machineconfig`) declares it under
 * `machine.network.interfaces[].vip` (siderolabs/talos v1.13.9). Talos elects one of the control
 * planes that declare it to hold it; a control plane that does not declare it never takes it over.
 */
export function endpointVipVerdict(
  gate: { id: string; title: string; endpoint: string; host: string; evidence: string[] },
  controlPlaneVips: Observed<Map<string, NodeVips>> | undefined,
): ReadinessGate {
  const { id, title, endpoint, host } = gate;
  if (controlPlaneVips === undefined)
    return {
      id,
      title,
      status: 'manual',
      summary: `${endpoint}: the control planes' machine configuration was not read, so nothing shows that ${host} is their virtual IP. Confirm it with talosctl get machineconfig`,
      evidence: gate.evidence,
    };
  if (!controlPlaneVips.ok)
    return {
      id,
      title,
      status: 'failed',
      summary: `could not read the control planes' machine configuration: ${controlPlaneVips.error}`,
      evidence: [...gate.evidence, controlPlaneVips.error],
    };
  const reads = controlPlaneVips.value;
  const evidence = [...gate.evidence, ...vipEvidence(reads)];
  if (reads.size === 0)
    return { id, title, status: 'failed', summary: `${endpoint}: no control plane was observed to read a virtual IP from`, evidence };
  const unread = [...reads].filter(([, read]) => 'unread' in read).map(([node]) => node);
  const without = [...reads].filter(([, read]) => 'vips' in read && !read.vips.includes(host)).map(([node]) => node);
  if (without.length === reads.size) {
    const declared = [...new Set([...reads.values()].flatMap((read) => ('vips' in read ? read.vips : [])))];
    const what =
      declared.length === 0 ? 'no control plane declares a virtual IP' : `the control planes declare ${declared.join(', ')} instead`;
    return { id, title, status: 'failed', summary: `${endpoint}: ${host} is no Talos virtual IP (${what}). Use one: ${HOW}`, evidence };
  }
  if (without.length > 0)
    return {
      id,
      title,
      status: 'failed',
      summary: `${endpoint}: ${without.join(', ')} do not declare the virtual IP ${host}, so the API is lost when the control planes that do are down. ${HOW}`,
      evidence,
    };
  if (unread.length > 0)
    return {
      id,
      title,
      status: 'failed',
      summary: `${endpoint}: could not read the machine configuration of ${unread.join(', ')} to see that it declares the virtual IP ${host}`,
      evidence,
    };
  return {
    id,
    title,
    status: 'passed',
    summary: `${endpoint}: ${host} is the virtual IP every control plane's machine configuration declares`,
    evidence,
  };
}
