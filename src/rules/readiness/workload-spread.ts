import type { V1Node, V1ObjectMeta, V1PodSpec, V1PodTemplateSpec } from '@kubernetes/client-node';
import type { Observed, ReadinessGate } from '../gate-result.ts';
import { ZONE_LABEL } from './host-placement.ts';

/** The parts of a Deployment or StatefulSet (`apps/v1`) the rule reads, with its kind (list items carry none). */
export interface Workload {
  kind: 'Deployment' | 'StatefulSet';
  metadata?: V1ObjectMeta;
  spec?: { replicas?: number; template: V1PodTemplateSpec };
}

/**
 * Namespaces whose workloads the operator does not author: Talos renders CoreDNS into kube-system
 * and rewrites it on upgrade, so a spread patched there does not last. Their missing spread is a
 * warning in the evidence; anywhere else it fails the gate, because the runbook asks for workload
 * placement by Proxmox host and a workload whose replicas can all share one host goes down with it.
 */
export const WARN_ONLY_NAMESPACES = new Set(['kube-system']);

export interface WorkloadSpread {
  status: 'passed' | 'failed';
  /** The workloads that fail, already fit for a summary; empty when none does. */
  failing: string[];
  evidence: string[];
}

function label(node: V1Node, key: string): string | undefined {
  const value = node.metadata?.labels?.[key];
  return value === undefined || value === '' ? undefined : value;
}

/** Zones are the hosts when every node has both labels and they pair one to one. */
function zonesAreHosts(hostLabel: string, nodes: V1Node[]): boolean {
  const hostOfZone = new Map<string, string>();
  const zoneOfHost = new Map<string, string>();
  for (const n of nodes) {
    const host = label(n, hostLabel);
    const zone = label(n, ZONE_LABEL);
    if (host === undefined || zone === undefined) return false;
    if ((hostOfZone.get(zone) ?? host) !== host || (zoneOfHost.get(host) ?? zone) !== zone) return false;
    hostOfZone.set(zone, host);
    zoneOfHost.set(host, zone);
  }
  return nodes.length > 0;
}

/** The pod spec's constraints on one of `keys`, described; empty when none. */
function constraintsOn(spec: V1PodSpec | undefined, keys: Set<string>): string[] {
  const found: string[] = [];
  for (const c of spec?.topologySpreadConstraints ?? [])
    if (keys.has(c.topologyKey)) found.push(`topologySpreadConstraints ${c.topologyKey} maxSkew=${c.maxSkew} ${c.whenUnsatisfiable}`);
  const anti = spec?.affinity?.podAntiAffinity;
  for (const term of anti?.requiredDuringSchedulingIgnoredDuringExecution ?? [])
    if (keys.has(term.topologyKey)) found.push(`podAntiAffinity required on ${term.topologyKey}`);
  for (const weighted of anti?.preferredDuringSchedulingIgnoredDuringExecution ?? [])
    if (keys.has(weighted.podAffinityTerm.topologyKey))
      found.push(`podAntiAffinity preferred (weight ${weighted.weight}) on ${weighted.podAffinityTerm.topologyKey}`);
  return found;
}

/**
 * Each Deployment and StatefulSet with more than one replica must spread its pods over the host
 * label (or the zone label when zones are the hosts), by a topology spread constraint or a pod
 * anti-affinity; otherwise the scheduler may put every replica on one Proxmox host. `replicas`
 * unset is 1 (apps/v1 defaults it so).
 */
export function workloadSpread(hostLabel: string, nodes: V1Node[], workloads: Workload[]): WorkloadSpread {
  const keys = new Set([hostLabel, ...(zonesAreHosts(hostLabel, nodes) ? [ZONE_LABEL] : [])]);
  const evidence: string[] = [];
  const failing: string[] = [];
  const sorted = [...workloads].sort((a, b) =>
    `${a.metadata?.namespace}/${a.metadata?.name}`.localeCompare(`${b.metadata?.namespace}/${b.metadata?.name}`),
  );
  for (const w of sorted) {
    const replicas = w.spec?.replicas ?? 1;
    if (replicas <= 1) continue;
    const namespace = w.metadata?.namespace ?? 'default';
    const name = `${w.kind} ${namespace}/${w.metadata?.name ?? '<unnamed>'}`;
    const found = constraintsOn(w.spec?.template.spec, keys);
    if (found.length > 0) {
      evidence.push(`${name} (${replicas} replicas): ${found.join('; ')}`);
    } else if (WARN_ONLY_NAMESPACES.has(namespace)) {
      evidence.push(`warning: ${name} (${replicas} replicas): no spread on ${[...keys].join(' or ')}, all may land on one host`);
    } else {
      evidence.push(`${name} (${replicas} replicas): no spread on ${[...keys].join(' or ')}, all may land on one host`);
      failing.push(name);
    }
  }
  return { status: failing.length === 0 ? 'passed' : 'failed', failing, evidence };
}

/**
 * The host placement gate with the workloads' spread folded in: the workloads' evidence follows
 * Longhorn's, and a failing workload fails the gate, said after Longhorn's verdict.
 */
export function withWorkloadSpread(
  gate: ReadinessGate,
  hostLabel: string,
  nodes: Observed<V1Node[]>,
  workloads: Observed<Workload[]>,
): ReadinessGate {
  if (!workloads.ok) {
    const summary = `could not read the Deployments and StatefulSets: ${workloads.error}`;
    return {
      ...gate,
      status: 'failed',
      summary: gate.status === 'failed' ? `${gate.summary}; and ${summary}` : summary,
      evidence: [...gate.evidence, workloads.error],
    };
  }
  const spread = workloadSpread(hostLabel, nodes.ok ? nodes.value : [], workloads.value);
  const evidence = [...gate.evidence, ...spread.evidence];
  if (spread.status === 'passed') return { ...gate, evidence };
  const summary = `${spread.failing.join(', ')} can put every replica on one host: add a topologySpreadConstraint or podAntiAffinity on ${hostLabel}`;
  return {
    ...gate,
    status: 'failed',
    summary: gate.status === 'failed' ? `${gate.summary}. Also, ${summary}` : summary,
    evidence,
  };
}
