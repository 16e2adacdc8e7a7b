/**
 * The page's controls that break the simulated estate, so a newcomer can rehearse a stop: each is
 * one of the simulator's own faults (test/sim/faults.ts), set on one cluster and cleared again.
 */
import type { Simulator } from '../../sim/index.ts';

export const BREAKS = {
  /** After its upgrade reboot the node's kubelet never gets Ready: the upgrade stops at that node. */
  'node-stays-down': 'does not come back after its upgrade',
  /** The new image does not boot: the node comes back on its old version. */
  'node-reverts': 'boots its old version after its upgrade',
  /** A workload's PodDisruptionBudget allows no disruption: the drain of its nodes would block. */
  'budget-blocks': 'disruption budget allows no disruption',
} as const;

export type BreakKind = keyof typeof BREAKS | 'clear';

export interface BreakRequest {
  cluster: string;
  kind: BreakKind;
  /** A node's hostname (node faults) or a PodDisruptionBudget's name (budget-blocks). */
  target?: string;
}

/** The nodes and the workloads' disruption budgets a cluster offers to break (Longhorn's own budgets are Longhorn's). */
export function breakTargets(sim: Simulator, cluster: string): { nodes: string[]; budgets: string[] } {
  const c = sim.cluster(cluster);
  return {
    nodes: c.nodes.map((n) => n.hostname),
    budgets: c.kube.pdbs.filter((p) => p.longhornNode === undefined).map((p) => p.name),
  };
}

/** Sets (or clears) the fault; throws with what to do when the request names nothing the cluster has. */
export function applyBreak(sim: Simulator, request: BreakRequest): string {
  if (!Object.keys(sim.state.clusters).includes(request.cluster))
    throw new Error(`no simulated cluster ${request.cluster}: choose ${Object.keys(sim.state.clusters).join(' or ')}`);
  if (request.kind === 'clear') {
    sim.faults.clear(request.cluster);
    return `${request.cluster}: every fault cleared`;
  }
  if (!(request.kind in BREAKS))
    throw new Error(`unknown fault ${String(request.kind)}: choose ${Object.keys(BREAKS).join(', ')} or clear`);
  const targets = breakTargets(sim, request.cluster);
  const target = request.target ?? '';
  const offered = request.kind === 'budget-blocks' ? targets.budgets : targets.nodes;
  if (!offered.includes(target))
    throw new Error(`${request.cluster} has no ${target || '(none given)'}: choose one of ${offered.join(', ')}`);
  const now = sim.faults.get(request.cluster);
  const add = (list: readonly string[] | undefined): string[] => [...new Set([...(list ?? []), target])];
  switch (request.kind) {
    case 'node-stays-down':
      sim.faults.set(request.cluster, { upgradeStaysNotReady: add(now.upgradeStaysNotReady) });
      break;
    case 'node-reverts':
      sim.faults.set(request.cluster, { upgradeSilentRevert: add(now.upgradeSilentRevert) });
      break;
    case 'budget-blocks':
      sim.faults.set(request.cluster, { pdbBlocked: add(now.pdbBlocked) });
      break;
  }
  return `${request.cluster}: ${target} ${BREAKS[request.kind]}`;
}
