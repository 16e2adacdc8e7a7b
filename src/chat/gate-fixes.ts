import type { CheckResult } from '../health/check-result.ts';

/** What an operator does about a failing check, by check id: one sentence each, the first thing to try. */
const FIXES: Readonly<Record<string, string>> = {
  'talos-version':
    'Bring every node to one Talos version (finish or roll back the upgrade that left them apart) and match the bot’s talosctl to it.',
  'talos-health': 'Read the failing `talosctl health` check in the evidence and fix that node first; the rest usually follow.',
  'etcd-service':
    'Look at `talosctl service etcd` and `talosctl logs etcd` on the named control plane, and bring etcd back before any change.',
  'etcd-status': 'Restore one leader and agreement among the etcd members (no alarms, no learners) before any node is drained or rebooted.',
  nodes: 'Make every node Ready and schedulable (uncordon a node left cordoned, or find out why the kubelet is not Ready).',
  pods: 'Get the named pods running and ready, or delete the ones stuck from an earlier change, so the drain has a healthy baseline.',
  flux: 'Fix the named Flux object (its message says why) and let it reconcile, or suspend it on purpose, before a change.',
  'disruption-budgets': 'Scale the named workload up or relax its PodDisruptionBudget, so draining its nodes cannot block.',
  cilium: 'Bring the Cilium agents and operator back to ready (`cilium status` names the unhealthy one) before a change.',
};

/** The one actionable sentence for a failing or warning check; a check without its own reads its evidence. */
export function fixFor(check: CheckResult): string {
  return FIXES[check.id] ?? `Fix what the evidence of ${check.title} names, then run the gate again.`;
}
