import { z } from 'zod';
import type { CheckResult } from '../check-result.ts';
import { joinProblems, plural } from './format.ts';

const ID = 'flux';

/** A kstatus condition as Flux sets it. */
export const FluxCondition = z.object({
  type: z.string(),
  status: z.string(),
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: z.string().optional(),
});
export type FluxCondition = z.infer<typeof FluxCondition>;

/** The parts of a Kustomization or HelmRelease that the Flux verdict reads. */
export const FluxObject = z.object({
  kind: z.string().optional(),
  metadata: z.object({
    name: z.string(),
    namespace: z.string().optional(),
    generation: z.number().optional(),
  }),
  spec: z
    .object({
      suspend: z.boolean().optional(),
      path: z.string().optional(),
    })
    .optional(),
  status: z
    .object({
      conditions: z.array(FluxCondition).optional(),
      observedGeneration: z.number().optional(),
    })
    .optional(),
});
export type FluxObject = z.infer<typeof FluxObject>;

type Verdict = { kind: 'ok' } | { kind: 'suspended' } | { kind: 'stalled' | 'note'; text: string };

function condition(object: FluxObject, type: string): FluxCondition | undefined {
  return object.status?.conditions?.find((c) => c.type === type);
}

function describeCondition(c: FluxCondition): string {
  const detail = [c.reason, c.message].filter((part) => part !== undefined && part !== '').join(': ');
  return `${c.type}=${c.status}${detail === '' ? '' : ` (${detail})`}`;
}

/**
 * Suspended objects keep their old conditions, so they are never judged. Otherwise stalled means
 * Stalled=True, Ready=False on the reconciled generation, or Reconciling with
 * ProgressingWithRetry; in-progress states are notes.
 */
function judge(object: FluxObject): Verdict {
  if (object.spec?.suspend === true) return { kind: 'suspended' };
  const stalled = condition(object, 'Stalled');
  if (stalled?.status === 'True') return { kind: 'stalled', text: describeCondition(stalled) };
  const reconciling = condition(object, 'Reconciling');
  if (reconciling?.status === 'True' && reconciling.reason === 'ProgressingWithRetry') {
    return { kind: 'stalled', text: describeCondition(reconciling) };
  }
  const ready = condition(object, 'Ready');
  if (ready === undefined) return { kind: 'note', text: 'no Ready condition yet (not reconciled)' };
  if (ready.status === 'True') return { kind: 'ok' };
  const generation = object.metadata.generation;
  const observed = object.status?.observedGeneration;
  if (ready.status === 'False') {
    if (generation !== undefined && observed === generation) return { kind: 'stalled', text: describeCondition(ready) };
    return {
      kind: 'note',
      text: `${describeCondition(ready)} on an earlier generation; generation ${generation ?? '?'} not reconciled yet (observed ${observed ?? 'none'})`,
    };
  }
  return { kind: 'note', text: `${describeCondition(ready)}: reconciliation in progress` };
}

interface Judged {
  label: string;
  verdict: Verdict;
}

function judgeAll(kind: string, objects: readonly unknown[]): Judged[] {
  return objects.map((raw, index) => {
    const parsed = FluxObject.safeParse(raw);
    if (!parsed.success) {
      return { label: `${kind} #${index + 1}`, verdict: { kind: 'stalled', text: 'unreadable object (no metadata.name)' } };
    }
    const { name, namespace } = parsed.data.metadata;
    return { label: `${kind} ${namespace ?? 'default'}/${name}`, verdict: judge(parsed.data) };
  });
}

/**
 * The runbook's `kubectl get kustomizations,helmreleases -A` verdict. Failed when an object is
 * stalled: Stalled=True, Ready=False with `status.observedGeneration == metadata.generation`, or
 * Reconciling with reason ProgressingWithRetry. Suspended objects are listed ("suspended: not
 * evaluated") but never fail; Ready=Unknown or a newer generation not yet reconciled is a
 * warning. Accepts the raw API objects; each is read through {@link FluxObject}.
 */
export function evaluateFlux(kustomizations: readonly unknown[], helmReleases: readonly unknown[]): CheckResult {
  const title = 'Flux Kustomizations and HelmReleases';
  const judged = [...judgeAll('Kustomization', kustomizations), ...judgeAll('HelmRelease', helmReleases)];
  const stalled: string[] = [];
  const notes: string[] = [];
  const suspended: string[] = [];
  for (const { label, verdict } of judged) {
    if (verdict.kind === 'stalled') stalled.push(`${label}: ${verdict.text}`);
    else if (verdict.kind === 'note') notes.push(`${label}: ${verdict.text}`);
    else if (verdict.kind === 'suspended') suspended.push(`${label}: suspended: not evaluated`);
  }
  const evidence = [...stalled, ...notes, ...suspended];
  if (stalled.length > 0) {
    return { id: ID, title, status: 'failed', summary: `Flux is stalled: ${joinProblems(stalled)}`, evidence };
  }
  if (notes.length > 0) {
    return { id: ID, title, status: 'warning', summary: `Flux is not fully reconciled: ${joinProblems(notes)}`, evidence };
  }
  const ready = judged.length - suspended.length;
  const summary = `${plural(kustomizations.length, 'Kustomization')} and ${plural(helmReleases.length, 'HelmRelease')}: ${ready} Ready${
    suspended.length > 0 ? `, ${suspended.length} suspended` : ''
  }`;
  return { id: ID, title, status: 'passed', summary, evidence };
}
