import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { errorText } from '../../../src/chat/error-text.ts';
import { drainPods, podList } from '../../../src/health/rules/drain-pods.ts';
import { findNodeByAddress } from '../../../src/talos/observe.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';

/** A node as the drain needs it: its Kubernetes name, and whether Kubernetes calls it Ready (cordoned or not). */
export interface DrainTarget {
  name: string | undefined;
  ready: boolean;
  /** Why Kubernetes could not be asked (its API down with the node): nothing can be drained then. */
  unanswered?: string;
}

function readyCondition(node: V1Node | undefined): boolean {
  return node?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

/** Whether the node at `address` can be drained now: only a Ready node runs the evictions' replacements down cleanly. */
export async function drainTarget(ctx: WalkContext, address: string): Promise<DrainTarget> {
  try {
    const node = findNodeByAddress(await ctx.session.kube.listNodes(probeSignal(ctx)), address);
    return { name: node?.metadata?.name, ready: readyCondition(node) };
  } catch (error) {
    if (ctx.signal?.aborted === true) throw error;
    return { name: undefined, ready: false, unanswered: errorText(error) };
  }
}

/** `90 s`, `30 min`: a bound as an operator reads it. */
export function boundText(ms: number): string {
  return ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
}

/**
 * Cordons `name` and evicts its pods through the eviction API (policy/v1 Eviction), the way
 * `kubectl drain --ignore-daemonsets` does: DaemonSet, static and controller-less pods stay
 * (src/health/rules/drain-pods.ts). A budget that refuses an eviction (429) is asked again on the
 * next look, until `timeoutMs` has passed; then the step stops, the node cordoned and otherwise
 * untouched. Returns what the drain did, for the step's detail.
 */
export async function cordonAndDrain(ctx: WalkContext, address: string, name: string, timeoutMs: number): Promise<string> {
  const { kube } = ctx.session;
  try {
    await kube.setUnschedulable(name, true, probeSignal(ctx));
  } catch (error) {
    throw new StepFailure(`${name} (${address}) could not be cordoned, so it was not touched: ${errorText(error)}`, [], {
      retry: 'nothing was changed by this step; Retry cordons and drains the node again',
      nodeUnchanged: true,
    });
  }
  // As kubectl drain does: the pods are listed once, and each counts as gone once no pod with its UID runs on the node.
  const plan = drainPods(await kube.listPods(probeSignal(ctx)), name);
  const waves = [plan.evict, plan.last].filter((w) => w.length > 0);
  const left = plan.left;
  const accepted = new Set<string>();
  const refusals = new Map<string, string>();
  let wave = 0;
  const drained = await pollUntil(ctx.deps.clock, { timeoutMs, intervalMs: ctx.deps.timeouts.pollMs, signal: ctx.signal }, async () => {
    const pods = await kube.listPods(probeSignal(ctx));
    const here = (pod: V1Pod): boolean => pods.some((p) => p.metadata?.uid === pod.metadata?.uid && p.spec?.nodeName === name);
    let current = (waves[wave] ?? []).filter(here);
    while (current.length === 0 && wave < waves.length) current = (waves[++wave] ?? []).filter(here);
    if (current.length === 0) return { done: true, value: undefined };
    refusals.clear();
    for (const pod of current) {
      const namespace = pod.metadata?.namespace ?? 'default';
      const podName = pod.metadata?.name ?? '';
      const answer = await kube.evictPod(namespace, podName, probeSignal(ctx));
      if (answer.outcome === 'evicted') accepted.add(pod.metadata?.uid ?? `${namespace}/${podName}`);
      else refusals.set(`${namespace}/${podName}`, answer.reason);
    }
    return { done: false, pending: `still on ${name}: ${podList(current)}` };
  });
  const evicted = accepted.size;
  const stays = left.length > 0 ? `; left on the node: ${left.join(', ')}` : '';
  if (!drained.ok) {
    throw new StepFailure(
      `${name} (${address}) did not drain within ${boundText(timeoutMs)}, so it was not rolled back: ${drained.pending}. It stays cordoned (kubectl uncordon ${name} to undo)`,
      [...refusals].map(([pod, reason]) => `eviction of ${pod} refused: ${reason}`),
      { retry: 'the node was cordoned, not rebooted; Retry drains it again, then rolls it back', nodeUnchanged: true },
    );
  }
  return `cordoned ${name} and evicted ${evicted} pod${evicted === 1 ? '' : 's'} through the eviction API${stays}`;
}
