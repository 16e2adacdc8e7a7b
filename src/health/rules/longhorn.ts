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
      kubernetesStatus: z.object({ pvcName: z.string().optional(), namespace: z.string().optional() }).optional(),
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
}

/** Reads the raw API lists into a view; an object that does not parse is left out, and named in `unreadable`. */
export function longhornView(volumes: readonly unknown[], replicas: readonly unknown[], settings: readonly unknown[]): { view: LonghornView; unreadable: string[] } {
  const unreadable: string[] = [];
  const parse = <T>(schema: z.ZodType<T>, kind: string, items: readonly unknown[]): T[] =>
    items.flatMap((raw, i) => {
      const parsed = schema.safeParse(raw);
      if (parsed.success) return [parsed.data];
      unreadable.push(`${kind} #${i + 1}`);
      return [];
    });
  const policy = parse(LonghornSetting, 'setting', settings).find((s) => s.metadata.name === 'node-drain-policy')?.value;
  return {
    view: {
      volumes: parse(LonghornVolume, 'volume', volumes),
      replicas: parse(LonghornReplica, 'replica', replicas),
      drainPolicy: policy === undefined || policy === '' ? DEFAULT_DRAIN_POLICY : policy,
    },
    unreadable,
  };
}

/** `pvc-1234… (apps/postgres-1)`: the volume with the claim an operator knows it by. */
export function volumeLabel(name: string, volumes: readonly LonghornVolume[]): string {
  const claim = volumes.find((v) => v.metadata.name === name)?.status?.kubernetesStatus;
  return claim?.pvcName ? `${name} (${claim.namespace ? `${claim.namespace}/` : ''}${claim.pvcName})` : name;
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

/**
 * Whether Longhorn will lift the instance-manager budget of `node` when the node is drained, under
 * the policy in force: `always-allow` always does; otherwise every volume with a replica there
 * (a running one, under `allow-if-replica-is-stopped`) needs a healthy replica on another node
 * that `protectedNode` accepts (Ready, schedulable, its own instance manager still under budget).
 * Under `block-for-eviction` the drain also waits while Longhorn moves every replica off the node.
 */
export function judgeInstanceManagerBudget(node: string, view: LonghornView, protectedNode: (name: string) => boolean): BudgetJudgement {
  const policy = view.drainPolicy;
  if (policy === 'always-allow') {
    return { level: 'ok', text: `node-drain-policy always-allow: Longhorn lifts it during the drain without looking at replicas` };
  }
  const onNode = view.replicas.filter((r) => r.spec.nodeID === node);
  const considered = policy === 'allow-if-replica-is-stopped' ? onNode.filter((r) => !stopped(r)) : onNode;
  const last = new Set<string>();
  for (const replica of considered) {
    if (neverStarted(replica)) continue;
    const elsewhere = view.replicas.some(
      (other) => other.spec.volumeName === replica.spec.volumeName && other.spec.nodeID !== undefined && other.spec.nodeID !== node && healthy(other) && protectedNode(other.spec.nodeID),
    );
    if (!elsewhere) last.add(volumeLabel(replica.spec.volumeName, view.volumes));
  }
  if (last.size > 0) {
    const volumes = [...last].join(', ');
    return { level: 'block', text: `${node} holds the last healthy replica of ${volumes}; under node-drain-policy ${policy} Longhorn keeps this budget` };
  }
  const volumes = new Set(onNode.map((r) => r.spec.volumeName)).size;
  if (policy === 'block-for-eviction' && onNode.length > 0) {
    return { level: 'wait', text: `node-drain-policy block-for-eviction: the drain waits while Longhorn moves the ${plural(onNode.length, 'replica')} on ${node} to other nodes` };
  }
  const what =
    volumes === 0
      ? `${node} holds no replica`
      : `${volumes === 1 ? 'the volume' : `each of the ${volumes} volumes`} with a replica on ${node} has a healthy replica on another node`;
  return { level: 'ok', text: `${what}, so Longhorn lifts it during the drain (node-drain-policy ${policy})` };
}
