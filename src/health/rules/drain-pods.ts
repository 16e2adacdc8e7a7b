import type { V1Pod } from '@kubernetes/client-node';

/**
 * Which pods of a node the bot's own drain asks the eviction API to evict, the way `kubectl drain
 * --ignore-daemonsets` chooses them (kubectl pkg/drain/filters.go): mirror pods are never evicted
 * (the kubelet owns them), DaemonSet pods stay (their controller would put them straight back), and
 * finished pods hold nothing. A pod without a controller is left too: nothing would recreate it
 * after an eviction, while the kubelet starts it again once the node is back (kubectl drain refuses
 * such a pod without --force). Longhorn's instance managers go last: Longhorn lifts their budgets
 * only once the volumes on the node have detached, which the other evictions bring about.
 */
export interface DrainPods {
  /** To evict now, in order. */
  evict: V1Pod[];
  /** Longhorn instance managers, evicted once `evict` is empty. */
  last: V1Pod[];
  /** Pods the drain leaves on the node, each with why: `kube-system/cilium-x (DaemonSet)`. */
  left: string[];
}

function id(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? '?'}`;
}

function instanceManager(pod: V1Pod): boolean {
  return pod.metadata?.labels?.['longhorn.io/component'] === 'instance-manager';
}

/** The pods bound to `nodeName`, sorted into what the drain evicts and what it leaves. */
export function drainPods(pods: readonly V1Pod[], nodeName: string): DrainPods {
  const result: DrainPods = { evict: [], last: [], left: [] };
  for (const pod of pods) {
    if (pod.spec?.nodeName !== nodeName) continue;
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') continue;
    const controller = pod.metadata?.ownerReferences?.find((o) => o.controller === true);
    if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) result.left.push(`${id(pod)} (static pod)`);
    else if (controller?.kind === 'DaemonSet') result.left.push(`${id(pod)} (DaemonSet)`);
    else if (controller === undefined) result.left.push(`${id(pod)} (no controller: the kubelet starts it again after the reboot)`);
    else if (instanceManager(pod)) result.last.push(pod);
    else result.evict.push(pod);
  }
  return result;
}

/** `apps/web-1, apps/web-2`: the pods still to go, for a progress line or a stop. */
export function podList(pods: readonly V1Pod[]): string {
  return pods.map(id).join(', ');
}
