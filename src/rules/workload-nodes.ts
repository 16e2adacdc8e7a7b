import type { V1Node } from '@kubernetes/client-node';

/** Taints a node carries for a state the health gate judges (not ready, unreachable, cordoned), not for its role. */
const STATE_TAINT_PREFIX = 'node.kubernetes.io/';
const CONTROL_PLANE_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];

/** Whether a Kubernetes Node takes ordinary workloads, and the taints that keep them off when it does not. */
export interface WorkloadNode {
  name: string;
  addresses: string[];
  controlPlane: boolean;
  accepts: boolean;
  /** `key:effect` of each taint that keeps ordinary pods off, e.g. `node-role.kubernetes.io/control-plane:NoSchedule`. */
  blockedBy: string[];
}

/**
 * Reads which Nodes accept workloads: a node without a NoSchedule or NoExecute taint for its
 * role or purpose. A control plane accepts them unless it carries
 * `node-role.kubernetes.io/control-plane:NoSchedule` (`allowSchedulingOnControlPlanes: true`
 * removes it); a worker, unless it was tainted for something else.
 */
export function workloadNodes(nodes: V1Node[]): WorkloadNode[] {
  return nodes.map((node) => {
    const blockedBy = (node.spec?.taints ?? [])
      .filter((t) => (t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !t.key.startsWith(STATE_TAINT_PREFIX))
      .map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`);
    const labels = node.metadata?.labels ?? {};
    return {
      name: node.metadata?.name ?? '<unnamed>',
      addresses: (node.status?.addresses ?? []).map((a) => a.address),
      controlPlane: CONTROL_PLANE_LABELS.some((label) => label in labels),
      accepts: blockedBy.length === 0,
      blockedBy,
    };
  });
}

function describe(node: WorkloadNode): string {
  return `${node.name} (${node.controlPlane ? 'control plane' : 'worker'})`;
}

/**
 * Removing the node at `address` must leave a node that accepts workloads, or its pods have
 * nowhere to go. Returns the refusal, naming every remaining node and the taints that decide
 * it, or the note for the plan naming where workloads keep running; nothing when the node to
 * be removed takes no workloads itself (or Kubernetes does not list it).
 */
export function workloadCapacityAfterRemoval(nodes: V1Node[], address: string): { refusal?: string; note?: string } {
  const all = workloadNodes(nodes);
  const leaving = all.find((n) => n.addresses.includes(address));
  if (leaving === undefined || !leaving.accepts) return {};
  const remaining = all.filter((n) => n !== leaving);
  const accepting = remaining.filter((n) => n.accepts);
  if (accepting.length > 0) {
    const cps = accepting.filter((n) => n.controlPlane);
    const why =
      cps.length > 0
        ? ` (${cps.map((n) => n.name).join(', ')}: control plane${cps.length > 1 ? 's' : ''} without the node-role.kubernetes.io/control-plane:NoSchedule taint)`
        : '';
    return { note: `Workloads of ${leaving.name} move to ${accepting.map(describe).join(', ')}${why}.` };
  }
  const blocked = remaining.map((n) => `${describe(n)} is tainted ${n.blockedBy.join(', ')}`);
  const rest = remaining.length === 0 ? 'it is the only node' : blocked.join('; ');
  return {
    refusal:
      `removing ${leaving.name} (${address}) would leave no node that accepts workloads: ${rest}. ` +
      'Add a worker first (a new `talos_nodes` entry, then apply Terraform), or let the control planes take workloads (`allowSchedulingOnControlPlanes: true`), then remove this one',
  };
}
