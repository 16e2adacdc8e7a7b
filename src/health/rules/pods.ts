import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { CheckResult, UnwellItem } from '../check-result.ts';
import { limitLines, plural } from './format.ts';

const ID = 'pods';

/** A thread reply stays readable; the count in the summary covers the rest. */
const MAX_EVIDENCE = 25;

function containerProblem(status: V1ContainerStatus): string | undefined {
  const waiting = status.state?.waiting?.reason;
  if (waiting !== undefined && waiting !== '') return waiting;
  const terminated = status.state?.terminated;
  if (terminated !== undefined && terminated.exitCode !== 0) return terminated.reason ?? `exited ${terminated.exitCode}`;
  return undefined;
}

/** Why a pod is not healthy, like kubectl's STATUS column; `undefined` when it is. */
function podProblem(pod: V1Pod): string | undefined {
  const phase = pod.status?.phase ?? 'Unknown';
  if (phase === 'Succeeded') return undefined;
  if (pod.metadata?.deletionTimestamp !== undefined) return 'Terminating';
  const containers = pod.status?.containerStatuses ?? [];
  const init = (pod.status?.initContainerStatuses ?? []).map(containerProblem).find((p) => p !== undefined);
  const reason = init === undefined ? containers.map(containerProblem).find((p) => p !== undefined) : `Init:${init}`;
  if (phase !== 'Running') return reason ?? pod.status?.reason ?? phase;
  if (reason !== undefined) return reason;
  const ready = containers.filter((c) => c.ready).length;
  const total = pod.spec?.containers.length ?? containers.length;
  return ready < total ? `Running but not ready (${ready}/${total})` : undefined;
}

function describe(pod: V1Pod, problem: string): string {
  const name = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? '<unnamed>'}`;
  const restarts = (pod.status?.containerStatuses ?? []).reduce((sum, c) => sum + c.restartCount, 0);
  const node = pod.spec?.nodeName;
  return `${name}: ${problem}${restarts > 0 ? `, ${plural(restarts, 'restart')}` : ''}${node === undefined ? '' : ` on ${node}`}`;
}

/**
 * A key that survives a drain: an evicted ReplicaSet pod comes back under another name, on another
 * node, from the same ReplicaSet; a DaemonSet's pod belongs to its node. A StatefulSet's pod, a
 * static pod and a bare pod keep their name.
 */
export function podKey(pod: V1Pod): string {
  const namespace = pod.metadata?.namespace ?? 'default';
  const owner = (pod.metadata?.ownerReferences ?? []).find((o) => o.controller === true);
  if (owner?.kind === 'ReplicaSet' || owner?.kind === 'Job') return `pod:${namespace}/${owner.kind}/${owner.name}`;
  if (owner?.kind === 'DaemonSet') return `pod:${namespace}/DaemonSet/${owner.name}@${pod.spec?.nodeName ?? ''}`;
  return `pod:${namespace}/${pod.metadata?.name ?? '<unnamed>'}`;
}

function unwellPod(pod: V1Pod, problem: string, stops: boolean): UnwellItem {
  const node = pod.spec?.nodeName;
  return {
    key: podKey(pod),
    kind: 'pod',
    name: `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? '<unnamed>'}`,
    ...(node === undefined || node === '' ? {} : { node }),
    reason: problem,
    stops,
  };
}

/**
 * The runbook's `kubectl get pods -A`. In the standard gate it is reported but never a stop (the
 * runbook's stop conditions do not include pods): passed with counts, or a warning listing pods
 * that are neither Running and ready nor Succeeded (CrashLoopBackOff, Pending, ImagePullBackOff, …).
 * In `final` mode (the runbook's "application probes pass") a pod that is not ready fails the
 * check as `settling`, so the final verification waits for it up to its settle window; a pod that
 * already ended (phase Failed) stays a warning, as nothing will make it ready.
 */
export function evaluatePods(pods: V1Pod[], options: { mode?: 'standard' | 'final' } = {}): CheckResult {
  const title = 'Kubernetes pods (all namespaces)';
  const completed = pods.filter((p) => p.status?.phase === 'Succeeded').length;
  const judged = pods.flatMap((pod) => {
    const problem = podProblem(pod);
    return problem === undefined ? [] : [{ line: describe(pod, problem), ended: pod.status?.phase === 'Failed', pod, problem }];
  });
  // A pod that already ended (phase Failed) is nothing waiting or a baseline could judge.
  const unwell = judged.filter((j) => !j.ended).map((j) => unwellPod(j.pod, j.problem, options.mode === 'final'));
  const unhealthy = judged.map((j) => j.line);
  const running = pods.length - completed - unhealthy.length;
  const counts = `${running} running and ready${completed > 0 ? `, ${completed} completed` : ''}`;
  if (unhealthy.length === 0) {
    return { id: ID, title, status: 'passed', summary: `all ${plural(pods.length, 'pod')} healthy: ${counts}`, evidence: [] };
  }
  const notReady = judged.filter((j) => !j.ended).map((j) => j.line);
  if (options.mode === 'final' && notReady.length > 0) {
    return {
      id: ID,
      title,
      status: 'failed',
      settling: true,
      summary: `${notReady.length} of ${plural(pods.length, 'pod')} not ready: ${limitLines(notReady, 3).join('; ')}`,
      evidence: limitLines(unhealthy, MAX_EVIDENCE),
      unwell,
    };
  }
  return {
    id: ID,
    title,
    status: 'warning',
    summary: `${unhealthy.length} of ${plural(pods.length, 'pod')} not healthy (${counts})`,
    evidence: limitLines(unhealthy, MAX_EVIDENCE),
    unwell,
  };
}
