import type { V1Node } from '@kubernetes/client-node';
import { errorText } from '../../src/chat/error-text.ts';
import type { ClusterStanding, EtcdStanding, NodeStanding } from '../../src/chat/stop-state.ts';
import { allNodes, type ClusterConfig } from '../../src/config/inventory.ts';
import { observeEtcdMembership } from '../../src/talos/etcd-membership.ts';
import { findNodeByAddress, pollTalosVersion } from '../../src/talos/observe.ts';
import type { EngineContext } from './playbook.ts';

/** Every node of the inventory, nothing read: what a stop says when it could not reach the cluster. */
export function unknownStanding(cluster: ClusterConfig, why: string, node?: string): ClusterStanding {
  const etcd: EtcdStanding | undefined = node !== undefined && cluster.controlPlanes.includes(node) ? { read: false, why } : undefined;
  return { nodes: allNodes(cluster).map((n) => ({ node: n })), unreachable: why, ...(etcd === undefined ? {} : { etcd }) };
}

/**
 * etcd's members and their health, read through the control planes other than `node` (the one the
 * stop is about, which may be down), within `signal`. A membership that could not be read is said
 * to be unread, never guessed from the inventory.
 */
async function observeEtcd(ctx: EngineContext, node: string, signal: AbortSignal): Promise<EtcdStanding> {
  const controlPlanes = ctx.cluster.controlPlanes;
  try {
    const membership = await observeEtcdMembership(ctx.talosctl, controlPlanes, node, signal);
    if (controlPlanes.every((cp) => membership.isMember(cp) === undefined))
      return { read: false, why: membership.evidence.at(-1) ?? 'etcd members did not answer' };
    return { read: true, members: membership.memberCount, healthy: membership.healthy, controlPlanes };
  } catch (error) {
    return { read: false, why: errorText(error) };
  }
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
 * holds up no other), and Ready and cordoned from the Kubernetes API; for a stop at a control plane
 * (`stoppedAt`), etcd's members, health and quorum too. Every read is bounded by the probe timeout and
 * best effort: what did not answer is left unknown, and nothing here throws, so the stop is always
 * recorded. Only a cancel of the run (its signal) ends the reads early.
 */
export async function observeStanding(ctx: EngineContext, stoppedAt?: string): Promise<ClusterStanding> {
  const probeMs = ctx.deps.timeouts.probeMs;
  const nodes = allNodes(ctx.cluster);
  const bounded = (): AbortSignal =>
    ctx.signal ? AbortSignal.any([ctx.signal, AbortSignal.timeout(probeMs)]) : AbortSignal.timeout(probeMs);
  const etcdOf = stoppedAt !== undefined && ctx.cluster.controlPlanes.includes(stoppedAt) ? stoppedAt : undefined;
  const [versions, kube, etcd] = await Promise.all([
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
    etcdOf === undefined ? undefined : observeEtcd(ctx, etcdOf, bounded()),
  ]);
  return {
    ...(etcd === undefined ? {} : { etcd }),
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
