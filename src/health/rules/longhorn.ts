import { z } from 'zod';
import { plural } from './format.ts';

/**
 * Longhorn as the bot reads it: volumes, replicas and the node-drain policy, judged the way
 * longhorn-manager judges them (reference/cluster-facts.md, Longhorn).
 */

export const DEFAULT_DRAIN_POLICY = 'block-if-contains-last-replica';

/** The parts of a `volumes.longhorn.io` object the rules read. */
export const LonghornVolume = z.object({
  metadata: z.object({ name: z.string() }),
  status: z
    .object({
      state: z.string().optional(),
      robustness: z.string().optional(),
      /** The node the volume's engine runs on while attached; empty when detached. */
      currentNodeID: z.string().optional(),
      kubernetesStatus: z
        .object({
          pvcName: z.string().optional(),
          namespace: z.string().optional(),
          /** The pods that use the volume's claim, as Longhorn reports them. */
          workloadsStatus: z.array(z.object({ podName: z.string().optional() })).nullish(),
        })
        .optional(),
    })
    .optional(),
});
export type LonghornVolume = z.infer<typeof LonghornVolume>;

/** The parts of a `replicas.longhorn.io` object the rules read. */
export const LonghornReplica = z.object({
  metadata: z.object({ name: z.string() }),
  spec: z.object({
    nodeID: z.string().optional(),
    volumeName: z.string(),
    desireState: z.string().optional(),
    healthyAt: z.string().optional(),
    failedAt: z.string().optional(),
  }),
  status: z.object({ currentState: z.string().optional() }).optional(),
});
export type LonghornReplica = z.infer<typeof LonghornReplica>;

/** A `settings.longhorn.io` object: its value sits beside `metadata`. */
export const LonghornSetting = z.object({ metadata: z.object({ name: z.string() }), value: z.string().optional() });

/** What the disruption-budget rule needs to judge Longhorn's own budgets. */
export interface LonghornView {
  volumes: LonghornVolume[];
  replicas: LonghornReplica[];
  /** The `node-drain-policy` setting in force. */
  drainPolicy: string;
  /** `replica-soft-anti-affinity`: a replica may be scheduled on a node that already holds one of its volume. */
  softAntiAffinity?: boolean;
}

/** Reads the raw API lists into a view; an object that does not parse is left out, and named in `unreadable`. */
export function longhornView(
  volumes: readonly unknown[],
  replicas: readonly unknown[],
  settings: readonly unknown[],
): { view: LonghornView; unreadable: string[] } {
  const unreadable: string[] = [];
  const parse = <T>(schema: z.ZodType<T>, kind: string, items: readonly unknown[]): T[] =>
    items.flatMap((raw, i) => {
      const parsed = schema.safeParse(raw);
      if (parsed.success) return [parsed.data];
      unreadable.push(`${kind} #${i + 1}`);
      return [];
    });
  const parsed = parse(LonghornSetting, 'setting', settings);
  const policy = parsed.find((s) => s.metadata.name === 'node-drain-policy')?.value;
  const soft = parsed.find((s) => s.metadata.name === 'replica-soft-anti-affinity')?.value === 'true';
  return {
    view: {
      volumes: parse(LonghornVolume, 'volume', volumes),
      replicas: parse(LonghornReplica, 'replica', replicas),
      drainPolicy: policy === undefined || policy === '' ? DEFAULT_DRAIN_POLICY : policy,
      softAntiAffinity: soft,
    },
    unreadable,
  };
}

/**
 * `apps/postgres-1 (volume pvc-1234…)`: the claim an operator knows the volume by, namespace first, then
 * Longhorn's name for it, which is what `kubectl -n longhorn-system get volumes` lists.
 */
export function volumeLabel(name: string, volumes: readonly LonghornVolume[]): string {
  const claim = volumes.find((v) => v.metadata.name === name)?.status?.kubernetesStatus;
  return claim?.pvcName ? `${claim.namespace ? `${claim.namespace}/` : ''}${claim.pvcName} (volume ${name})` : `volume ${name}`;
}

/**
 * Volumes that are not healthy yet, one line each. A detached volume reports robustness `unknown`:
 * no engine runs, so Longhorn cannot tell, and that is not degraded.
 */
export function unhealthyVolumes(volumes: readonly unknown[]): string[] {
  return volumes.flatMap((raw, i) => {
    const parsed = LonghornVolume.safeParse(raw);
    if (!parsed.success) return [`volume #${i + 1}: unreadable`];
    const { state, robustness } = parsed.data.status ?? {};
    if (robustness === 'healthy' || state === 'detached') return [];
    return [`${volumeLabel(parsed.data.metadata.name, [parsed.data])}: ${robustness ?? 'no robustness yet'}${state ? ` (${state})` : ''}`];
  });
}

/** Healthy as longhorn-manager's `IsAvailableHealthyReplica` reads it: it became healthy and has not failed since. */
function healthy(replica: LonghornReplica): boolean {
  return (replica.spec.healthyAt ?? '') !== '' && (replica.spec.failedAt ?? '') === '';
}

function stopped(replica: LonghornReplica): boolean {
  return replica.spec.desireState === 'stopped' && replica.status?.currentState === 'stopped';
}

function neverStarted(replica: LonghornReplica): boolean {
  return (replica.spec.healthyAt ?? '') === '' && (replica.spec.failedAt ?? '') === '';
}

export type BudgetJudgement = { level: 'ok' | 'wait' | 'block'; text: string };

/** What the drain does to the nodes and pods around a Longhorn node, as the disruption-budget rule knows it. */
export interface DrainContext {
  /** A node Longhorn may keep or put a replica on: Ready, schedulable, its instance manager under budget. */
  protectedNode: (name: string) => boolean;
  /**
   * Whether the drain of the node removes this pod (`namespace`, `name`); `undefined` when the pod
   * is not on the node. A pod the drain leaves in place keeps its volumes attached.
   */
  removes: (namespace: string, name: string) => boolean | undefined;
}

const EVICTION_POLICIES = new Set(['block-for-eviction', 'block-for-eviction-if-contains-last-replica']);

/**
 * Volumes attached on `node` that the drain does not detach. longhorn-manager
 * (controller/instance_manager_controller.go `canDeleteInstanceManagerPDB`, v1.10.2) keeps the
 * budget until every volume attached there has detached, whatever the policy: a volume used by a
 * pod the drain leaves (a DaemonSet pod, a static pod) or attached with no pod (by hand, or by
 * another attacher) keeps it for good.
 */
function staysAttached(node: string, view: LonghornView, context: DrainContext): string[] {
  return view.volumes.flatMap((volume) => {
    const status = volume.status;
    if (status?.currentNodeID !== node || status.state === 'detached') return [];
    const namespace = status.kubernetesStatus?.namespace ?? '';
    const pods = (status.kubernetesStatus?.workloadsStatus ?? []).flatMap((w) => (w.podName ? [w.podName] : []));
    const here = pods.filter((pod) => context.removes(namespace, pod) !== undefined);
    const kept = here.filter((pod) => context.removes(namespace, pod) === false);
    const label = volumeLabel(volume.metadata.name, [volume]);
    if (kept.length > 0)
      return [`${label} stays attached to ${kept.map((p) => `${namespace}/${p}`).join(', ')}, which the drain does not evict`];
    if (here.length === 0)
      return [`${label} is attached on ${node} with no pod there that the drain evicts (attached by hand or by another attacher)`];
    return [];
  });
}

/**
 * Where Longhorn can rebuild a replica it evicts from `node`: another Longhorn node that takes
 * replicas and, unless `replica-soft-anti-affinity` is on, holds none of the volume yet.
 */
function evictionTarget(
  node: string,
  volume: string,
  view: LonghornView,
  context: DrainContext,
  candidates: readonly string[],
): string | undefined {
  const holders = new Set(view.replicas.filter((r) => r.spec.volumeName === volume).map((r) => r.spec.nodeID));
  return candidates.find((c) => c !== node && context.protectedNode(c) && (view.softAntiAffinity === true || !holders.has(c)));
}

/**
 * Whether Longhorn will lift the instance-manager budget of `node` when the node is drained, the
 * way longhorn-manager v1.10.2 decides it (controller/instance_manager_controller.go
 * `canDeleteInstanceManagerPDB`, controller/node_controller.go `shouldEvictReplica`):
 * - a volume still attached on the node once the drain has evicted what it evicts blocks, under every policy;
 * - `always-allow` lets go;
 * - `block-for-eviction` evicts every replica of the node and `block-for-eviction-if-contains-last-replica`
 *   each one without a healthy replica elsewhere: Longhorn rebuilds them on other nodes, and the
 *   drain waits for that. A replica with nowhere to go is never evicted, and blocks;
 * - otherwise every replica there (a running one, under `allow-if-replica-is-stopped`) needs a
 *   healthy replica on another node that `protectedNode` accepts.
 * `longhornNodes` are the nodes with an instance-manager budget, where Longhorn puts replicas.
 */
export function judgeInstanceManagerBudget(
  node: string,
  view: LonghornView,
  context: DrainContext,
  longhornNodes: readonly string[] = [],
): BudgetJudgement {
  const policy = view.drainPolicy;
  const attached = staysAttached(node, view, context);
  if (attached.length > 0) {
    return {
      level: 'block',
      text: `${attached.join('; ')}; Longhorn keeps this budget until every volume attached on ${node} has detached`,
    };
  }
  if (policy === 'always-allow') {
    return { level: 'ok', text: `node-drain-policy always-allow: Longhorn lifts it during the drain without looking at replicas` };
  }
  const onNode = view.replicas.filter((r) => r.spec.nodeID === node);
  const considered = policy === 'allow-if-replica-is-stopped' ? onNode.filter((r) => !stopped(r)) : onNode;
  const last = new Map<string, string>();
  for (const replica of considered) {
    if (neverStarted(replica)) continue;
    const elsewhere = view.replicas.some(
      (other) =>
        other.spec.volumeName === replica.spec.volumeName &&
        other.spec.nodeID !== undefined &&
        other.spec.nodeID !== node &&
        healthy(other) &&
        context.protectedNode(other.spec.nodeID),
    );
    if (!elsewhere) last.set(replica.spec.volumeName, volumeLabel(replica.spec.volumeName, view.volumes));
  }
  if (EVICTION_POLICIES.has(policy)) {
    const evicted = policy === 'block-for-eviction' ? [...new Set(onNode.map((r) => r.spec.volumeName))] : [...last.keys()];
    const stuck = evicted
      .filter((v) => evictionTarget(node, v, view, context, longhornNodes) === undefined)
      .map((v) => volumeLabel(v, view.volumes));
    if (stuck.length > 0) {
      const why =
        view.softAntiAffinity === true
          ? 'no other schedulable Longhorn node'
          : 'every other schedulable Longhorn node already holds one of its replicas (replica-soft-anti-affinity is off)';
      return {
        level: 'block',
        text: `under node-drain-policy ${policy} Longhorn must move the replica of ${stuck.join(', ')} off ${node} first, but ${why}: the drain would wait for good`,
      };
    }
    if (evicted.length > 0) {
      return {
        level: 'wait',
        text: `node-drain-policy ${policy}: the drain waits while Longhorn rebuilds the ${plural(evicted.length, 'replica')} on ${node} on other nodes (about one rebuild of each volume), then lifts it`,
      };
    }
  } else if (last.size > 0) {
    return {
      level: 'block',
      text: `${node} holds the last healthy replica of ${[...last.values()].join(', ')}; under node-drain-policy ${policy} Longhorn keeps this budget`,
    };
  }
  const volumes = new Set(onNode.map((r) => r.spec.volumeName)).size;
  const what =
    volumes === 0
      ? `${node} holds no replica`
      : `${volumes === 1 ? 'the volume' : `each of the ${volumes} volumes`} with a replica on ${node} has a healthy replica on another node`;
  return { level: 'ok', text: `${what}, so Longhorn lifts it during the drain (node-drain-policy ${policy})` };
}
