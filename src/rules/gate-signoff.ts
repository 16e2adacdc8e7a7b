import { z } from 'zod';
import type { ReadinessGate } from './gate-result.ts';

/** The longest evidence kept: a link or a short note, not a document. */
export const SIGN_OFF_EVIDENCE_MAX = 500;

/** The cluster's nodes as observed when a sign-off was given: the sign-off holds for that shape only. */
export const ClusterShape = z.object({
  controlPlanes: z.array(z.string()).max(100),
  workers: z.array(z.string()).max(1000),
});
export type ClusterShape = z.infer<typeof ClusterShape>;

/** An approver's word that a gate only a person can judge holds, as kept with the records. */
export const GateSignOff = z.object({
  cluster: z.string().min(1),
  gate: z.string().regex(/^[a-z0-9-]{1,64}$/),
  /** The approver's Slack user id. */
  by: z.string().regex(/^[UW][A-Z0-9]{2,30}$/),
  at: z.iso.datetime(),
  /** A link or a note that shows the gate holds. */
  evidence: z.string().trim().min(1).max(SIGN_OFF_EVIDENCE_MAX),
  shape: ClusterShape,
});
export type GateSignOff = z.infer<typeof GateSignOff>;

function sorted(list: readonly string[]): string[] {
  return [...list].sort();
}

/** Nodes in the same roles, whatever their order. */
export function sameShape(a: ClusterShape, b: ClusterShape): boolean {
  const same = (x: readonly string[], y: readonly string[]): boolean => sorted(x).join(',') === sorted(y).join(',');
  return same(a.controlPlanes, b.controlPlanes) && same(a.workers, b.workers);
}

/** How a shape reads in evidence: `3 control planes (…), 1 worker (…)`. */
export function describeShape(shape: ClusterShape): string {
  const part = (list: string[], one: string, many: string): string =>
    `${list.length} ${list.length === 1 ? one : many}${list.length > 0 ? ` (${sorted(list).join(', ')})` : ''}`;
  return `${part(shape.controlPlanes, 'control plane', 'control planes')}, ${part(shape.workers, 'worker', 'workers')}`;
}

/** Why a sign-off no longer counts, or undefined while it does. */
export function signOffLapse(signOff: GateSignOff, shape: ClusterShape, now: Date, maxAgeMs: number): string | undefined {
  const age = now.getTime() - new Date(signOff.at).getTime();
  if (age > maxAgeMs)
    return `its evidence is older than ${Math.round(maxAgeMs / 86_400_000)} days (SIGNOFF_MAX_AGE_DAYS): check again and sign off anew`;
  if (!sameShape(signOff.shape, shape))
    return `the cluster changed shape since: it was ${describeShape(signOff.shape)}, it is ${describeShape(shape)}. Check again for the nodes it has now and sign off anew`;
  return undefined;
}

/**
 * A gate only a person can judge counts once an approver signed it off for the cluster as it is
 * now, and while the evidence is fresh. A sign-off that lapsed is shown with why, and the gate
 * waits for a person again. Gates the bot checked are never touched: a sign-off does not hide a failure.
 */
export function applySignOffs(
  gates: readonly ReadinessGate[],
  signOffs: readonly GateSignOff[],
  shape: ClusterShape,
  now: Date,
  maxAgeMs: number,
): ReadinessGate[] {
  return gates.map((gate) => {
    if (gate.status !== 'manual') return gate;
    const signOff = signOffs.find((s) => s.gate === gate.id);
    if (signOff === undefined) return gate;
    const lapse = signOffLapse(signOff, shape, now, maxAgeMs);
    const given = { by: signOff.by, at: signOff.at, evidence: signOff.evidence };
    if (lapse !== undefined) return { ...gate, signOff: { ...given, lapse } };
    return {
      ...gate,
      status: 'signed-off',
      signOff: given,
      evidence: [...gate.evidence, `signed off for ${describeShape(signOff.shape)}`],
    };
  });
}
