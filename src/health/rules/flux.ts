import { z } from 'zod';
import type { CheckResult, UnwellItem } from '../check-result.ts';
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

/** One entry of a Kustomization's `status.history` (fluxcd/pkg apis/meta history.go): stamped once per digest and status. */
export const FluxSnapshot = z.object({
  digest: z.string().optional(),
  firstReconciled: z.string().optional(),
  lastReconciled: z.string().optional(),
  lastReconciledStatus: z.string().optional(),
  metadata: z.record(z.string(), z.string()).optional(),
});
export type FluxSnapshot = z.infer<typeof FluxSnapshot>;

/** The parts of a Kustomization or HelmRelease that the Flux verdict reads. */
export const FluxObject = z.object({
  kind: z.string().optional(),
  metadata: z.object({
    name: z.string(),
    namespace: z.string().optional(),
    generation: z.number().optional(),
    annotations: z.record(z.string(), z.string()).optional(),
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
      lastAttemptedRevision: z.string().optional(),
      /** Kustomizations only; a HelmRelease records what it applied in its release history instead. */
      lastAppliedRevision: z.string().optional(),
      history: z.array(FluxSnapshot).optional(),
      /**
       * HelmRelease: failures against the latest desired state, reset by a successful
       * reconciliation (helm-controller v1.6.3 api/v2/helmrelease_types.go).
       */
      failures: z.number().optional(),
      /** The last `reconcile.fluxcd.io/requestedAt` value the controller handled. */
      lastHandledReconcileAt: z.string().optional(),
    })
    .optional(),
});
export type FluxObject = z.infer<typeof FluxObject>;

/**
 * `stalled` is what the runbook stops on: the controller gave up (Stalled=True) or an attempt has
 * not progressed within the window. `failing` is any other failure the controller reports and
 * retries: before an operation it is part of the baseline, during one it stops as a regression.
 */
type Verdict = { kind: 'ok' } | { kind: 'suspended' } | { kind: 'stalled' | 'failing' | 'note'; text: string };

/** How long a revision may stay attempted but not applied before Flux counts as failing, in ms, when the caller names no window. */
export const DEFAULT_FLUX_STALL_MS = 10 * 60_000;

export interface FluxOptions {
  /** Milliseconds since the epoch; default `Date.now()`. */
  now?: number;
  /**
   * How long `lastAttemptedRevision` may differ from `lastAppliedRevision` before the object counts
   * as failing, in ms (measured from the controller's own record of the attempt, see {@link judge}). Default 10 minutes.
   */
  stallMs?: number;
  /** `final`: every object that is not suspended must be Ready (the runbook's final verification). Default `standard`. */
  mode?: 'standard' | 'final';
}

/**
 * Ready=False reasons that mean "waiting", not "failed": the object itself has not failed an attempt.
 * DependencyNotReady (fluxcd/pkg apis/meta conditions.go) waits for another object, which is judged
 * on its own; HealthCheckCanceled means a newer reconciliation superseded this one
 * (kustomize-controller v1.9.4 internal/controller/kustomization_controller.go). Every other reason
 * a controller writes on Ready=False (BuildFailed, ReconciliationFailed, HealthCheckFailed,
 * PruneFailed, ArtifactFailed, InstallFailed, UpgradeFailed, RollbackSucceeded, ...) is a failure.
 */
const WAITING_REASONS = new Set(['DependencyNotReady', 'HealthCheckCanceled', 'Progressing']);

/** The snapshot status kustomize-controller records for a successful apply. */
const SUCCEEDED = 'ReconciliationSucceeded';

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
 * The earliest controller-written time that proves `revision` has been attempted and not applied
 * since: a `status.history` snapshot of it (stamped `firstReconciled` once per digest and status,
 * fluxcd/pkg apis/meta history.go), or the start of the attempt in progress (Ready=Unknown keeps
 * its time for the whole attempt). Restamping only makes these younger than the truth, so the
 * window can fire late, never early. Also returns a snapshot of a failed attempt at it, if any.
 */
function attemptsOf(object: FluxObject, revision: string, ready: FluxCondition | undefined): { since?: number; failed?: FluxSnapshot } {
  const snapshots = (object.status?.history ?? []).filter((s) => s.metadata?.['revision'] === revision);
  const times = [...snapshots.map((s) => s.firstReconciled), ...(ready?.status === 'Unknown' ? [ready.lastTransitionTime] : [])]
    .map((t) => Date.parse(t ?? ''))
    .filter((t) => !Number.isNaN(t));
  const failed = snapshots.find((s) => s.lastReconciledStatus !== undefined && s.lastReconciledStatus !== SUCCEEDED);
  return { ...(times.length > 0 ? { since: Math.min(...times) } : {}), ...(failed !== undefined ? { failed } : {}) };
}

/**
 * How the controllers report a failing object (kustomize-controller v1.9.4 and helm-controller
 * v1.6.3): every retry starts by setting Ready=Unknown "Reconciliation in progress", and fluxcd/pkg's
 * condition setter stamps a new lastTransitionTime whenever status, reason or message change. So
 * the age of Ready=False says nothing about how long an object has been failing, and it is never read.
 * An object is stalled, which the runbook stops on whatever the baseline says, when:
 * - Stalled=True: the controller gave up until something changes (helm-controller v1.6.3
 *   internal/reconcile/atomic_release.go marks it when remediation retries are exhausted,
 *   RetriesExceeded, or no rollback target exists; kustomize-controller v1.9.4 for errors no retry
 *   fixes, such as AccessDenied; fluxcd/pkg runtime conditions: Stalled=True means no further
 *   progress without a change);
 * - or `lastAttemptedRevision` differs from `lastAppliedRevision`, no attempt at it failed, and its
 *   first attempt is older than `stallMs`: it has not progressed within the window. A one-shot gate
 *   cannot remember when it first saw the mismatch, so its age is the earliest controller-written
 *   time that proves it (see {@link attemptsOf}).
 * An object is failing, which a baseline tolerates, when the controller reports a failure it retries:
 * - Ready=False with a failure reason (anything but the waiting reasons above);
 * - Reconciling=True with reason ProgressingWithRetry (the controller retries a failed attempt);
 * - a HelmRelease whose `status.failures` is above zero (reset only by a success);
 * - or a revision mismatch whose attempt the controller's own record shows failed.
 * An object progressing without a failed attempt is a note ("still reconciling").
 */
function judge(object: FluxObject, now: number, stallMs: number): Verdict {
  if (object.spec?.suspend === true) return { kind: 'suspended' };
  const stalled = condition(object, 'Stalled');
  if (stalled?.status === 'True') return { kind: 'stalled', text: describeCondition(stalled) };
  const ready = condition(object, 'Ready');
  const reconciling = condition(object, 'Reconciling');
  if (ready?.status === 'True') return { kind: 'ok' };
  if (ready?.status === 'False' && !WAITING_REASONS.has(ready.reason ?? '')) return { kind: 'failing', text: describeCondition(ready) };
  if (reconciling?.status === 'True' && reconciling.reason === 'ProgressingWithRetry') {
    return {
      kind: 'failing',
      text: `${describeCondition(reconciling)}; ${ready === undefined ? 'no Ready condition' : describeCondition(ready)}`,
    };
  }
  const failures = object.status?.failures ?? 0;
  if (failures > 0) {
    // A HelmRelease caught at the start of a retry reads Ready=Unknown; its failure count still tells.
    return {
      kind: 'failing',
      text: `${failures} failed attempt${failures === 1 ? '' : 's'} at the desired state; ${ready === undefined ? 'no Ready condition' : describeCondition(ready)}`,
    };
  }
  const attempted = object.status?.lastAttemptedRevision;
  const applied = object.status?.lastAppliedRevision;
  // Only Kustomizations report lastAppliedRevision; a HelmRelease without it is judged by its conditions.
  if (attempted !== undefined && attempted !== '' && applied !== undefined && attempted !== applied) {
    const { since, failed } = attemptsOf(object, attempted, ready);
    const mismatch = `revision ${attempted} attempted, ${applied === '' ? 'none' : applied} applied`;
    if (failed !== undefined) {
      const at = since === undefined ? '' : `, failing since ${duration(now - since)} ago`;
      return { kind: 'failing', text: `${mismatch}: the last attempt failed (${failed.lastReconciledStatus ?? 'failed'})${at}` };
    }
    if (since !== undefined && now - since >= stallMs) {
      return { kind: 'stalled', text: `${mismatch} for ${duration(now - since)}: not progressed within ${duration(stallMs)}` };
    }
    const age = since === undefined ? 'no recorded attempt yet' : `attempted for ${duration(now - since)}`;
    return { kind: 'note', text: `${mismatch}, ${age}; reconciliation in progress` };
  }
  if (ready === undefined) return { kind: 'note', text: 'no Ready condition yet (not reconciled)' };
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
      return { label: `${kind} #${index + 1}`, verdict: { kind: 'failing', text: 'unreadable object (no metadata.name)' } };
    }
    const { name, namespace } = parsed.data.metadata;
    return { label: `${kind} ${namespace ?? 'default'}/${name}`, verdict: judge(parsed.data, now, stallMs) };
  });
}

/**
 * The runbook's `kubectl get kustomizations,helmreleases -A` verdict. Failed when an object is
 * stalled or failing as its controller reports it (see {@link judge}); a stalled object is marked
 * `neverBaseline` (the runbook stops on it), a failing one is what an operation's baseline may hold. Suspended objects are listed
 * ("suspended: not evaluated") but never fail; an object progressing without a failed attempt is a
 * warning. In `final` mode every object that is not suspended must be Ready: one still reconciling
 * fails as `settling` (waiting may clear it), a failing one fails outright. Accepts the raw API
 * objects; each is read through {@link FluxObject}.
 */
export function evaluateFlux(kustomizations: readonly unknown[], helmReleases: readonly unknown[], options: FluxOptions = {}): CheckResult {
  const title = 'Flux Kustomizations and HelmReleases';
  const now = options.now ?? Date.now();
  const stallMs = options.stallMs ?? DEFAULT_FLUX_STALL_MS;
  const judged = [...judgeAll('Kustomization', kustomizations, now, stallMs), ...judgeAll('HelmRelease', helmReleases, now, stallMs)];
  const stalled: string[] = [];
  const failing: string[] = [];
  const notes: string[] = [];
  const suspended: string[] = [];
  const unwell: UnwellItem[] = [];
  for (const { label, verdict } of judged) {
    // The key says how bad it is: an object that went from reconciling to failing, or from failing to stalled, got worse.
    if (verdict.kind === 'stalled' || verdict.kind === 'failing' || verdict.kind === 'note')
      unwell.push({
        key: `flux:${label}${verdict.kind === 'note' ? '' : `#${verdict.kind}`}`,
        kind: 'flux',
        name: label,
        reason: verdict.kind === 'stalled' ? `stalled: ${verdict.text}` : verdict.text,
        stops: verdict.kind !== 'note' || options.mode === 'final',
        ...(verdict.kind === 'stalled' ? { neverBaseline: true } : {}),
      });
    if (verdict.kind === 'stalled') stalled.push(`${label}: ${verdict.text}`);
    else if (verdict.kind === 'failing') failing.push(`${label}: ${verdict.text}`);
    else if (verdict.kind === 'note') notes.push(`${label}: ${verdict.text}`);
    else if (verdict.kind === 'suspended') suspended.push(`${label}: suspended: not evaluated`);
  }
  const evidence = [...stalled, ...failing, ...notes, ...suspended];
  if (stalled.length > 0) {
    const also = failing.length > 0 ? `; also failing: ${joinProblems(failing)}` : '';
    return { id: ID, title, status: 'failed', summary: `Flux is stalled: ${joinProblems(stalled)}${also}`, evidence, unwell };
  }
  if (failing.length > 0) {
    return { id: ID, title, status: 'failed', summary: `Flux is failing: ${joinProblems(failing)}`, evidence, unwell };
  }
  if (notes.length > 0 && options.mode === 'final') {
    return { id: ID, title, status: 'failed', settling: true, summary: `Flux is not ready: ${joinProblems(notes)}`, evidence, unwell };
  }
  if (notes.length > 0) {
    return { id: ID, title, status: 'warning', summary: `Flux is not fully reconciled: ${joinProblems(notes)}`, evidence, unwell };
  }
  const ready = judged.length - suspended.length;
  const summary = `${plural(kustomizations.length, 'Kustomization')} and ${plural(helmReleases.length, 'HelmRelease')}: ${ready} Ready${
    suspended.length > 0 ? `, ${suspended.length} suspended` : ''
  }`;
  return { id: ID, title, status: 'passed', summary, evidence };
}
