import type { V1Node } from '@kubernetes/client-node';
import { errorText } from '../../src/chat/error-text.ts';
import type { ClusterStanding, NodeStanding } from '../../src/chat/stop-state.ts';
import { allNodes, type ClusterConfig } from '../../src/config/inventory.ts';
import { findNodeByAddress, pollTalosVersion } from '../../src/talos/observe.ts';
import type { WalkContext } from './playbook.ts';

/** Every node of the inventory, nothing read: what a stop says when it could not reach the cluster. */
export function unknownStanding(cluster: ClusterConfig, why: string): ClusterStanding {
  return { nodes: allNodes(cluster).map((node) => ({ node })), unreachable: why };
}

function kubeFacts(node: V1Node | undefined): Pick<NodeStanding, 'name' | 'ready' | 'cordoned'> {
  if (node === undefined) return {};
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status;
  return {
    name: node.metadata?.name,
    ready: ready === undefined ? undefined : ready === 'True',
    cordoned: node.spec?.unschedulable === true,
  };
}

/**
 * Each node as a stop finds it: its Talos version (each node asked alone, so one that is rebooting
 * holds up no other), and Ready and cordoned from the Kubernetes API. Every read is bounded by the
 * probe timeout and best effort: what did not answer is left unknown, and nothing here throws, so
 * the stop is always recorded. Only a cancel of the run (its signal) ends the reads early.
 */
export async function observeStanding(ctx: WalkContext): Promise<ClusterStanding> {
  const probeMs = ctx.deps.timeouts.probeMs;
  const nodes = allNodes(ctx.cluster);
  const bounded = (): AbortSignal =>
    ctx.signal ? AbortSignal.any([ctx.signal, AbortSignal.timeout(probeMs)]) : AbortSignal.timeout(probeMs);
  const [versions, kube] = await Promise.all([
    Promise.all(
      nodes.map((node) =>
        (async () => pollTalosVersion(ctx.talosctl, node, { probeMs, signal: ctx.signal }))().catch((error: unknown) => ({
          reachable: false as const,
          error: errorText(error),
        })),
      ),
    ),
    // Inside an async function, so that even a read that throws at once becomes an unknown.
    (async () => ctx.session.kube.listNodes(bounded()))().then(
      (list) => ({ list }),
      (error: unknown) => ({ error: errorText(error) }),
    ),
  ]);
  return {
    nodes: nodes.map((node, i): NodeStanding => {
      const version = versions[i]!;
      const errors = [...(version.reachable ? [] : [`talos: ${version.error}`]), ...('error' in kube ? [`kubernetes: ${kube.error}`] : [])];
      return {
        node,
        ...('list' in kube ? kubeFacts(findNodeByAddress(kube.list, node)) : {}),
        ...(version.reachable ? { version: version.version } : {}),
        ...(errors.length > 0 ? { errors } : {}),
      };
    }),
  };
}
