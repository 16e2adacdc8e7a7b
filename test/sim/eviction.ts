/**
 * The eviction subresource (`POST …/pods/<name>/eviction`, policy/v1 Eviction) and the cordon
 * (`PATCH nodes/<name>` with `spec.unschedulable`), answered the way kube-apiserver answers them:
 * kubernetes/kubernetes pkg/registry/core/pod/storage/eviction.go (reference/storage-budgets.md).
 */
import { isCordoned } from './cluster-model.ts';
import { disruptionsAllowed, pdbsMatching, podReady, type Json } from './kube-objects.ts';
import { evictPod } from './workloads.ts';
import type { SimCluster } from './types.ts';

export interface EvictionAnswer {
  code: number;
  body: Json;
  /** The pod that went, or the budget that refused (`ns/name`), for the recorder. */
  evicted?: string;
  refusedBy?: string;
}

function status(code: number, reason: string, message: string, details: Json = {}): Json {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: code < 400 ? 'Success' : 'Failure', message, reason, details, code };
}

/**
 * `EvictionREST.Create`: a Pending pod is deleted without a budget check (`canIgnorePDB`); more
 * than one matching budget is a 500; a pod that is not ready is let go while its budget has its
 * desired healthy pods; otherwise `checkAndDecrement` refuses with 429 TooManyRequests when the
 * budget allows no disruption, naming it with its desired and current healthy counts. `reconcile`
 * runs first: the controllers that watch a cordoned node (Longhorn's) have acted by the time a
 * client asks.
 */
export function answerEviction(
  cluster: SimCluster,
  namespace: string,
  name: string,
  body: Json | undefined,
  now: number,
  reconcile: (hostname: string) => void,
): EvictionAnswer {
  const metadata = (body?.['metadata'] ?? {}) as { name?: string };
  if (body !== undefined && metadata.name !== undefined && metadata.name !== name) {
    return { code: 400, body: status(400, 'BadRequest', 'name in URL does not match name in Eviction object') };
  }
  const pod = cluster.kube.pods.find((p) => p.name === name && p.namespace === namespace);
  if (!pod) return { code: 404, body: status(404, 'NotFound', `pods ${JSON.stringify(name)} not found`, { name, kind: 'pods' }) };
  const node = cluster.nodes.find((n) => n.hostname === pod.nodeName);
  if (node !== undefined && isCordoned(cluster, node)) reconcile(node.hostname);
  const id = `${namespace}/${name}`;
  if (pod.nodeName === '') {
    cluster.kube.pods = cluster.kube.pods.filter((p) => p !== pod);
    cluster.kube.resourceVersion++;
    return { code: 201, body: status(201, '', ''), evicted: id };
  }
  const budgets = pdbsMatching(cluster, pod);
  if (budgets.length > 1) {
    return {
      code: 500,
      body: status(
        500,
        'InternalError',
        'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
      ),
    };
  }
  const budget = budgets[0];
  if (budget !== undefined) {
    const { allowed, healthy } = disruptionsAllowed(cluster, budget);
    const unreadyWithinBudget = !podReady(cluster, pod) && healthy >= budget.minAvailable && budget.minAvailable > 0;
    if (!unreadyWithinBudget && allowed < 1) {
      return {
        code: 429,
        body: status(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.", {
          causes: [
            {
              reason: 'DisruptionBudget',
              message: `The disruption budget ${budget.name} needs ${budget.minAvailable} healthy pods and has ${healthy} currently`,
            },
          ],
        }),
        refusedBy: `${budget.namespace}/${budget.name}`,
      };
    }
  }
  // A pod bound to its node is deleted and created again there by its owner, as a new pod object
  // with a new UID: a DaemonSet's, a static pod's mirror. Longhorn's instance manager is not created
  // again while the node is cordoned (controller/instance_manager_controller.go, v1.10.2: "the node
  // cordon cannot prevent the pod being launched", so it waits for the node to be schedulable).
  if (pod.owner.kind === 'InstanceManager') cluster.kube.pods = cluster.kube.pods.filter((p) => p !== pod);
  else if (pod.mirror === true || pod.owner.kind === 'DaemonSet' || pod.owner.kind === 'Node') pod.createdAt = now;
  else evictPod(cluster, pod, now);
  cluster.kube.resourceVersion++;
  return { code: 201, body: status(201, '', ''), evicted: id };
}

/**
 * A JSON merge patch (or strategic merge patch) of a Node: only `spec.unschedulable` is taken, the
 * field `kubectl cordon` and `kubectl uncordon` set; anything else in the patch is refused, so a
 * client that changes more than it should is caught.
 */
export function unschedulableFromPatch(body: Json | undefined): boolean | 'invalid' {
  const keys = Object.keys(body ?? {});
  const spec = body?.['spec'] as Json | undefined;
  if (keys.some((k) => k !== 'spec') || spec === undefined || Object.keys(spec).some((k) => k !== 'unschedulable')) return 'invalid';
  const value = spec['unschedulable'];
  if (value === true) return true;
  if (value === false || value === null) return false;
  return 'invalid';
}
