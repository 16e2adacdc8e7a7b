import type { V1DaemonSet, V1Deployment } from '@kubernetes/client-node';
import type { CheckResult } from '../check-result.ts';
import { joinProblems } from './format.ts';

const ID = 'cilium';

/** Where the runbook's clusters run Cilium (reference/cluster-facts.md, Cilium). */
export const CILIUM_AGENT = { namespace: 'kube-system', name: 'cilium' } as const;
export const CILIUM_OPERATOR = { namespace: 'kube-system', name: 'cilium-operator' } as const;
/** Cilium ≥ 1.16's chart runs Envoy as its own DaemonSet (label `k8s-app: cilium-envoy`) unless `envoy.enabled=false`. */
export const CILIUM_ENVOY = { namespace: 'kube-system', name: 'cilium-envoy' } as const;

/** The `major.minor` of the agent's image tag (`quay.io/cilium/cilium:v1.18.4@sha256:…`), when it has one. */
function agentMinor(agent: V1DaemonSet): [number, number] | undefined {
  const image =
    agent.spec?.template?.spec?.containers?.find((c) => c.name === 'cilium-agent')?.image ??
    agent.spec?.template?.spec?.containers?.[0]?.image ??
    '';
  const m = /:v?(\d+)\.(\d+)/.exec(image.replace(/@sha256:.*$/, ''));
  return m === null ? undefined : [Number(m[1]), Number(m[2])];
}

/** Why a Cilium DaemonSet (`what`: agent, envoy) is not ready on every node, as `kubectl rollout status` reads it; `undefined` when it is. */
function daemonSetProblem(what: string, agent: V1DaemonSet, nodeCount: number): string | undefined {
  const generation = agent.metadata?.generation;
  const observed = agent.status?.observedGeneration;
  if (generation !== undefined && (observed === undefined || observed < generation)) {
    return `${what} DaemonSet generation ${generation} not observed yet (observedGeneration ${observed ?? 'none'})`;
  }
  const desired = agent.status?.desiredNumberScheduled ?? 0;
  const ready = agent.status?.numberReady ?? 0;
  const available = agent.status?.numberAvailable ?? 0;
  const updated = agent.status?.updatedNumberScheduled ?? 0;
  if (desired < nodeCount) return `${what} scheduled on ${desired} of ${nodeCount} nodes`;
  if (ready < desired || available < desired) return `${what} ready on ${Math.min(ready, available)} of ${desired} nodes`;
  if (updated < desired) return `${what} updated on ${updated} of ${desired} nodes (rollout in progress)`;
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
 * `kube-system/cilium` is ready on every node (`nodeCount`), the `cilium-operator` Deployment is
 * available and, where it runs (Cilium ≥ 1.16 by default), the `cilium-envoy` DaemonSet is ready on
 * every node too: without it the agents' L7 proxy and Ingress/Gateway traffic do not work. An agent
 * ≥ 1.16 without the envoy DaemonSet runs Envoy inside the agent (`envoy.enabled=false`), which is
 * said in the evidence, not failed. A missing agent or operator fails outright; one not ready yet
 * fails as `settling`, since they come up again after a node reboots.
 */
export function evaluateCilium(
  agent: V1DaemonSet | undefined,
  operator: V1Deployment | undefined,
  nodeCount: number,
  envoy?: V1DaemonSet,
): CheckResult {
  const title = 'Cilium agent and operator';
  const missing = [
    ...(agent === undefined ? [`no agent DaemonSet ${CILIUM_AGENT.namespace}/${CILIUM_AGENT.name}`] : []),
    ...(operator === undefined ? [`no operator Deployment ${CILIUM_OPERATOR.namespace}/${CILIUM_OPERATOR.name}`] : []),
  ];
  if (missing.length > 0)
    return { id: ID, title, status: 'failed', summary: `Cilium is not healthy: ${joinProblems(missing)}`, evidence: missing };
  const problems = [
    daemonSetProblem('agent', agent!, nodeCount),
    operatorProblem(operator!),
    ...(envoy === undefined ? [] : [daemonSetProblem('envoy', envoy, nodeCount)]),
  ].filter((p): p is string => p !== undefined);
  const agentLine = `agent ${CILIUM_AGENT.namespace}/${CILIUM_AGENT.name}: ${agent!.status?.numberReady ?? 0} ready of ${agent!.status?.desiredNumberScheduled ?? 0} desired, ${nodeCount} nodes`;
  const operatorLine = `operator ${CILIUM_OPERATOR.namespace}/${CILIUM_OPERATOR.name}: ${operator!.status?.availableReplicas ?? 0} of ${operator!.status?.replicas ?? 0} available`;
  const minor = agentMinor(agent!);
  const envoyLine =
    envoy !== undefined
      ? [
          `envoy ${CILIUM_ENVOY.namespace}/${CILIUM_ENVOY.name}: ${envoy.status?.numberReady ?? 0} ready of ${envoy.status?.desiredNumberScheduled ?? 0} desired`,
        ]
      : minor !== undefined && (minor[0] > 1 || (minor[0] === 1 && minor[1] >= 16))
        ? [`no ${CILIUM_ENVOY.namespace}/${CILIUM_ENVOY.name} DaemonSet: Envoy runs inside the agent (envoy.enabled=false)`]
        : [];
  const evidence = [agentLine, operatorLine, ...envoyLine];
  if (problems.length > 0) {
    return { id: ID, title, status: 'failed', settling: true, summary: `Cilium is not healthy: ${joinProblems(problems)}`, evidence };
  }
  const envoyReady = envoy === undefined ? '' : '; envoy ready on all nodes';
  return {
    id: ID,
    title,
    status: 'passed',
    summary: `Cilium agent ready on all ${nodeCount} nodes; operator available${envoyReady}`,
    evidence,
  };
}
