import type { V1Node } from '@kubernetes/client-node';
import { z } from 'zod';
import type { CustomObject } from '../../kube/kube-api.ts';
import type { Observed, ReadinessGate } from '../gate-result.ts';

/**
 * Longhorn's scheduling settings that keep a volume's replicas apart (longhorn/longhorn-manager
 * types/setting.go, v1.12.1): `replica-soft-anti-affinity` ("Replica Node Level Soft
 * Anti-Affinity", default "false") allows two replicas on one node when "true";
 * `replica-zone-soft-anti-affinity` ("Replica Zone Level Soft Anti-Affinity", default "true")
 * allows two replicas in one zone when "true".
 */
export const NODE_SOFT_ANTI_AFFINITY = 'replica-soft-anti-affinity';
export const ZONE_SOFT_ANTI_AFFINITY = 'replica-zone-soft-anti-affinity';
const DEFAULTS: Record<string, string> = { [NODE_SOFT_ANTI_AFFINITY]: 'false', [ZONE_SOFT_ANTI_AFFINITY]: 'true' };

/**
 * The node label Longhorn reads a node's zone from (types/types.go `KubernetesTopologyZoneLabelKey`,
 * copied into `nodes.longhorn.io` status.zone by controller/node_controller.go, v1.12.1). Nodes
 * without it are all one zone to Longhorn.
 */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

const Setting = z.object({ metadata: z.object({ name: z.string() }), value: z.string().optional() });

function settingValue(settings: CustomObject[], name: string): { value: string; defaulted: boolean } {
  for (const object of settings) {
    const parsed = Setting.safeParse(object);
    if (parsed.success && parsed.data.metadata.name === name && parsed.data.value !== undefined)
      return { value: parsed.data.value.trim().toLowerCase(), defaulted: false };
  }
  return { value: DEFAULTS[name]!, defaulted: true };
}

function label(node: V1Node, key: string): string | undefined {
  const value = node.metadata?.labels?.[key];
  return value === undefined || value === '' ? undefined : value;
}

function kubectlSet(name: string, value: string): string {
  return `kubectl -n longhorn-system patch settings.longhorn.io ${name} --type merge -p '{"value":"${value}"}'`;
}

/**
 * The runbook: "Label every node with its physical Proxmox host. Use those labels for workload and
 * Longhorn replica placement." Longhorn keeps a volume's replicas on different hosts when either
 * every node is a host of its own and node anti-affinity is hard, or zone anti-affinity is hard and
 * Longhorn's zones are the hosts: every node of one host in one zone, no zone across two hosts.
 */
export function hostPlacementGate(
  hostLabel: string,
  nodes: Observed<V1Node[]>,
  settings: Observed<CustomObject[] | undefined>,
): ReadinessGate {
  const id = 'host-placement';
  const title = 'Longhorn replicas kept apart by Proxmox host';
  if (!nodes.ok)
    return { id, title, status: 'failed', summary: `could not read the Kubernetes nodes: ${nodes.error}`, evidence: [nodes.error] };
  if (!settings.ok)
    return { id, title, status: 'failed', summary: `could not read Longhorn's settings: ${settings.error}`, evidence: [settings.error] };
  if (settings.value === undefined)
    return {
      id,
      title,
      status: 'failed',
      summary: 'Longhorn is not installed (the API serves no settings.longhorn.io), so nothing keeps replicas on different hosts',
      evidence: [],
    };
  const nodeSoft = settingValue(settings.value, NODE_SOFT_ANTI_AFFINITY);
  const zoneSoft = settingValue(settings.value, ZONE_SOFT_ANTI_AFFINITY);
  const shownSetting = (name: string, s: { value: string; defaulted: boolean }) =>
    `${name}: ${s.value}${s.defaulted ? " (not set: Longhorn's default)" : ''}`;
  const evidence = [
    shownSetting(NODE_SOFT_ANTI_AFFINITY, nodeSoft),
    shownSetting(ZONE_SOFT_ANTI_AFFINITY, zoneSoft),
    ...nodes.value.map(
      (n) =>
        `${n.metadata?.name ?? '<unnamed>'}  ${hostLabel}=${label(n, hostLabel) ?? '<unset>'}  ${ZONE_LABEL}=${label(n, ZONE_LABEL) ?? '<unset>'}`,
    ),
  ];
  if (nodes.value.length === 0) return { id, title, status: 'failed', summary: 'Kubernetes lists no nodes', evidence };

  const unlabelled = nodes.value.filter((n) => label(n, hostLabel) === undefined).map((n) => n.metadata?.name ?? '<unnamed>');
  if (unlabelled.length > 0)
    return {
      id,
      title,
      status: 'failed',
      summary: `${unlabelled.join(', ')} ${unlabelled.length === 1 ? 'has' : 'have'} no ${hostLabel} label, so its host is unknown: add it through machine.nodeLabels`,
      evidence,
    };

  const byHost = new Map<string, string[]>();
  for (const n of nodes.value)
    byHost.set(label(n, hostLabel)!, [...(byHost.get(label(n, hostLabel)!) ?? []), n.metadata?.name ?? '<unnamed>']);
  const shared = [...byHost].filter(([, names]) => names.length > 1);

  // Zones as Longhorn sees them: a node without the label is in the one unnamed zone.
  const zoneOf = (n: V1Node) => label(n, ZONE_LABEL) ?? '';
  const zonesOfHost = new Map<string, Set<string>>();
  const hostsOfZone = new Map<string, Set<string>>();
  for (const n of nodes.value) {
    const host = label(n, hostLabel)!;
    zonesOfHost.set(host, (zonesOfHost.get(host) ?? new Set()).add(zoneOf(n)));
    hostsOfZone.set(zoneOf(n), (hostsOfZone.get(zoneOf(n)) ?? new Set()).add(host));
  }
  const zoneProblems = [
    ...nodes.value.filter((n) => label(n, ZONE_LABEL) === undefined).map((n) => `${n.metadata?.name ?? '<unnamed>'} has no ${ZONE_LABEL}`),
    ...[...zonesOfHost]
      .filter(([, zones]) => zones.size > 1)
      .map(([host, zones]) => `host ${host} spans the zones ${[...zones].sort().join(', ')}`),
    ...[...hostsOfZone]
      .filter(([zone, hosts]) => zone !== '' && hosts.size > 1)
      .map(([zone, hosts]) => `zone ${zone} spans the hosts ${[...hosts].sort().join(', ')}`),
  ];
  const zonesAreHosts = zoneProblems.length === 0;
  const zoneHard = zoneSoft.value === 'false';
  const nodeHard = nodeSoft.value === 'false';

  if (zoneHard && zonesAreHosts)
    return {
      id,
      title,
      status: 'passed',
      summary: `${ZONE_SOFT_ANTI_AFFINITY} is false and each node's ${ZONE_LABEL} is its host: no two replicas of a volume on one host`,
      evidence,
    };
  if (nodeHard && shared.length === 0)
    return {
      id,
      title,
      status: 'passed',
      summary: `${NODE_SOFT_ANTI_AFFINITY} is false and every node is on a host of its own (${[...byHost.keys()].sort().join(', ')}): no two replicas of a volume on one host`,
      evidence,
    };

  const zoneFix = `label each node ${ZONE_LABEL}=<its ${hostLabel}> through machine.nodeLabels`;
  if (shared.length === 0) {
    return {
      id,
      title,
      status: 'failed',
      summary: `${NODE_SOFT_ANTI_AFFINITY} is ${nodeSoft.value}: Longhorn may put two replicas of a volume on one node, so on one Proxmox host. Set it to false: ${kubectlSet(NODE_SOFT_ANTI_AFFINITY, 'false')}`,
      evidence,
    };
  }
  const sharing = shared.map(([host, names]) => `${names.join(' and ')} share ${host}`).join('; ');
  const why = zoneHard
    ? `Longhorn's zones are not the hosts (${zoneProblems.join('; ')})`
    : `${ZONE_SOFT_ANTI_AFFINITY} is ${zoneSoft.value}, so Longhorn keeps replicas apart by node at most`;
  const fixes = [
    ...(zoneHard ? [] : [`set ${ZONE_SOFT_ANTI_AFFINITY} to false: ${kubectlSet(ZONE_SOFT_ANTI_AFFINITY, 'false')}`]),
    ...(zonesAreHosts ? [] : [zoneFix]),
  ];
  return {
    id,
    title,
    status: 'failed',
    summary: `${sharing}: ${why}, and two replicas of a volume can land on one host. ${fixes.join('; and ')}`,
    evidence,
  };
}
