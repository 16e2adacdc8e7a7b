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

/** How long Ready=False may last before Flux counts as stalled, in ms, when the caller names no window. */
export const DEFAULT_FLUX_STALL_MS = 10 * 60_000;

export interface FluxOptions {
  /** Milliseconds since the epoch; default `Date.now()`. */
  now?: number;
  /** How long Ready=False may last (from its `lastTransitionTime`) before the object counts as stalled, in ms. Default 10 minutes. */
  stallMs?: number;
  /** `final`: every object that is not suspended must be Ready (the runbook's final verification). Default `standard`. */
  mode?: 'standard' | 'final';
}

function condition(object: FluxObject, type: string): FluxCondition | undefined {
  return object.status?.conditions?.find((c) => c.type === type);
}

function describeCondition(c: FluxCondition): string {
  const detail = [c.reason, c.message].filter((part) => part !== undefined && part !== '').join(': ');
  return `${c.type}=${c.status}${detail === '' ? '' : ` (${detail})`}`;
}

function duration(ms: number): string {
  if (ms < 120_000) return `${Math.max(0, Math.round(ms / 1000))} s`;
  if (ms < 2 * 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

/**
 * Suspended objects keep their old conditions, so they are never judged. Stalled means
 * Stalled=True, or Ready=False for longer than the stall window (a condition's
 * lastTransitionTime moves only when its status changes). An object still reconciling
 * (Reconciling=True, Ready Unknown, or Ready=False within the window while Flux retries) is a note.
 */
function judge(object: FluxObject, now: number, stallMs: number): Verdict {
  if (object.spec?.suspend === true) return { kind: 'suspended' };
  const stalled = condition(object, 'Stalled');
  if (stalled?.status === 'True') return { kind: 'stalled', text: describeCondition(stalled) };
  const ready = condition(object, 'Ready');
  if (ready === undefined) return { kind: 'note', text: 'no Ready condition yet (not reconciled)' };
  if (ready.status === 'True') return { kind: 'ok' };
  const generation = object.metadata.generation;
  const observed = object.status?.observedGeneration;
  const reconciling = condition(object, 'Reconciling')?.status === 'True' ? 'reconciling, ' : '';
  if (ready.status === 'False') {
    const since = ready.lastTransitionTime === undefined ? Number.NaN : Date.parse(ready.lastTransitionTime);
    if (Number.isNaN(since)) {
      // Without a transition time the age is unknown: a failure on the reconciled generation counts as stalled.
      if (generation !== undefined && observed === generation) return { kind: 'stalled', text: describeCondition(ready) };
    } else if (now - since >= stallMs) {
      return { kind: 'stalled', text: `${describeCondition(ready)} for ${duration(now - since)} (stall window ${duration(stallMs)})` };
    } else {
      return { kind: 'note', text: `${describeCondition(ready)} for ${duration(now - since)}; ${reconciling}stalled if it lasts ${duration(stallMs)}` };
    }
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

function judgeAll(kind: string, objects: readonly unknown[], now: number, stallMs: number): Judged[] {
  return objects.map((raw, index) => {
    const parsed = FluxObject.safeParse(raw);
    if (!parsed.success) {
      return { label: `${kind} #${index + 1}`, verdict: { kind: 'stalled', text: 'unreadable object (no metadata.name)' } };
    }
    const { name, namespace } = parsed.data.metadata;
    return { label: `${kind} ${namespace ?? 'default'}/${name}`, verdict: judge(parsed.data, now, stallMs) };
  });
}

/**
 * The runbook's `kubectl get kustomizations,helmreleases -A` verdict. Failed when an object is
 * stalled: Stalled=True, or Ready=False for longer than `stallMs`. Suspended objects are listed
 * ("suspended: not evaluated") but never fail; an object still reconciling is a warning. In
 * `final` mode every object that is not suspended must be Ready: one still reconciling fails as
 * `settling` (waiting may clear it), a stalled one fails outright. Accepts the raw API objects;
 * each is read through {@link FluxObject}.
 */
export function evaluateFlux(kustomizations: readonly unknown[], helmReleases: readonly unknown[], options: FluxOptions = {}): CheckResult {
  const title = 'Flux Kustomizations and HelmReleases';
  const now = options.now ?? Date.now();
  const stallMs = options.stallMs ?? DEFAULT_FLUX_STALL_MS;
  const judged = [...judgeAll('Kustomization', kustomizations, now, stallMs), ...judgeAll('HelmRelease', helmReleases, now, stallMs)];
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
  if (notes.length > 0 && options.mode === 'final') {
    return { id: ID, title, status: 'failed', settling: true, summary: `Flux is not ready: ${joinProblems(notes)}`, evidence };
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
