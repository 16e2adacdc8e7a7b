import type { V1DaemonSet, V1Deployment } from '@kubernetes/client-node';
import type { CheckResult } from '../check-result.ts';
import { joinProblems } from './format.ts';

const ID = 'cilium';

/** Where the runbook's clusters run Cilium (reference/cluster-facts.md, Cilium). */
export const CILIUM_AGENT = { namespace: 'kube-system', name: 'cilium' } as const;
export const CILIUM_OPERATOR = { namespace: 'kube-system', name: 'cilium-operator' } as const;

/** Why the agent DaemonSet is not ready on every node, as `kubectl rollout status` reads it; `undefined` when it is. */
function agentProblem(agent: V1DaemonSet, nodeCount: number): string | undefined {
  const generation = agent.metadata?.generation;
  const observed = agent.status?.observedGeneration;
  if (generation !== undefined && (observed === undefined || observed < generation)) {
    return `agent DaemonSet generation ${generation} not observed yet (observedGeneration ${observed ?? 'none'})`;
  }
  const desired = agent.status?.desiredNumberScheduled ?? 0;
  const ready = agent.status?.numberReady ?? 0;
  const available = agent.status?.numberAvailable ?? 0;
  const updated = agent.status?.updatedNumberScheduled ?? 0;
  if (desired < nodeCount) return `agent scheduled on ${desired} of ${nodeCount} nodes`;
  if (ready < desired || available < desired) return `agent ready on ${Math.min(ready, available)} of ${desired} nodes`;
  if (updated < desired) return `agent updated on ${updated} of ${desired} nodes (rollout in progress)`;
  return undefined;
}

function operatorProblem(operator: V1Deployment): string | undefined {
  const available = operator.status?.conditions?.find((c) => c.type === 'Available');
  if (available?.status !== 'True') {
    const why = [available?.reason, available?.message].filter((p) => p !== undefined && p !== '').join(': ');
    return `operator not available${why === '' ? '' : ` (${why})`}`;
  }
  if ((operator.status?.availableReplicas ?? 0) < 1) return 'operator has no available replica';
  return undefined;
}

/**
 * "Cilium is healthy", as far as the Kubernetes objects tell: the agent DaemonSet
 * `kube-system/cilium` is ready on every node (`nodeCount`) and the `cilium-operator` Deployment
 * is available. A missing object fails outright; an agent or operator not ready yet fails as
 * `settling`, since they come up again after a node reboots.
 */
export function evaluateCilium(agent: V1DaemonSet | undefined, operator: V1Deployment | undefined, nodeCount: number): CheckResult {
  const title = 'Cilium agent and operator';
  const missing = [
    ...(agent === undefined ? [`no agent DaemonSet ${CILIUM_AGENT.namespace}/${CILIUM_AGENT.name}`] : []),
    ...(operator === undefined ? [`no operator Deployment ${CILIUM_OPERATOR.namespace}/${CILIUM_OPERATOR.name}`] : []),
  ];
  if (missing.length > 0) return { id: ID, title, status: 'failed', summary: `Cilium is not healthy: ${joinProblems(missing)}`, evidence: missing };
  const problems = [agentProblem(agent!, nodeCount), operatorProblem(operator!)].filter((p): p is string => p !== undefined);
  const agentLine = `agent ${CILIUM_AGENT.namespace}/${CILIUM_AGENT.name}: ${agent!.status?.numberReady ?? 0} ready of ${agent!.status?.desiredNumberScheduled ?? 0} desired, ${nodeCount} nodes`;
  const operatorLine = `operator ${CILIUM_OPERATOR.namespace}/${CILIUM_OPERATOR.name}: ${operator!.status?.availableReplicas ?? 0} of ${operator!.status?.replicas ?? 0} available`;
  if (problems.length > 0) {
    return { id: ID, title, status: 'failed', settling: true, summary: `Cilium is not healthy: ${joinProblems(problems)}`, evidence: [agentLine, operatorLine] };
  }
  return { id: ID, title, status: 'passed', summary: `Cilium agent ready on all ${nodeCount} nodes; operator available`, evidence: [agentLine, operatorLine] };
}
