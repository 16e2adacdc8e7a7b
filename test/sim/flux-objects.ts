/**
 * Flux Kustomizations and HelmReleases as their controllers write them, rendered on every read.
 *
 * Followed upstream (reference/flux-health-cilium.md):
 * - fluxcd/kustomize-controller v1.9.4 internal/controller/kustomization_controller.go: every
 *   reconcile starts with Ready=Unknown "Reconciliation in progress" and Reconciling=True
 *   Progressing; a failure sets Ready=False with its reason; finalizeStatus turns Reconciling's
 *   reason into ProgressingWithRetry while Ready=False, and sets observedGeneration only when
 *   Ready=True (also on a suspended object whose stale Ready is True); lastAttemptedRevision is
 *   set before the build, lastAppliedRevision only on success; apply and health-check failures
 *   are upserted into status.history.
 * - fluxcd/helm-controller v1.6.3 internal/reconcile/atomic_release.go: Ready=Unknown before each
 *   release action, Reconciling ProgressingWithRetry while remediation retries remain, Stalled
 *   only for RetriesExceeded (or MissingRollbackTarget); `failures` counts failed attempts.
 * - fluxcd/pkg runtime v0.110.1 runtime/conditions/setter.go: a new lastTransitionTime whenever
 *   status, reason or message change, and conditions sorted Stalled, Reconciling, Ready, others.
 * - fluxcd/pkg apis/meta v1.30.1 history.go: a snapshot per digest and status, `firstReconciled`
 *   stamped once.
 * A fault picks the phase of the retry cycle the object is read in, so a test knows what it reads.
 */
import { createHash } from 'node:crypto';
import { meta, timestamp, type Json } from './kube-objects.ts';
import type { FluxObjectState, SimCluster } from './types.ts';

/** Where in the controller's cycle an object is read. */
type Phase = 'ready' | 'suspended' | 'stalled' | 'failed' | 'retrying' | 'progressing' | 'restarted';

const HOUR = 3_600_000;
/** `spec.retryInterval` of the simulated Kustomizations and the wait between HelmRelease retries. */
const RETRY = '2m0s';
const TIMEOUT = '5m0s';

function phaseOf(cluster: SimCluster, name: string): { phase: Phase; failingForMs: number } {
  const f = cluster.faults;
  const has = (list: string[] | undefined): boolean => (list ?? []).includes(name);
  if (has(f.fluxSuspended)) return { phase: 'suspended', failingForMs: 0 };
  if (has(f.fluxStalled)) return { phase: 'stalled', failingForMs: HOUR };
  if (has(f.fluxFailingRecently)) return { phase: 'failed', failingForMs: 30_000 };
  if (has(f.fluxNotReady)) return { phase: 'failed', failingForMs: HOUR };
  if (has(f.fluxRetrying)) return { phase: 'retrying', failingForMs: HOUR };
  if (has(f.fluxReconciling)) return { phase: 'progressing', failingForMs: 0 };
  return { phase: 'ready', failingForMs: 0 };
}

/** The annotation `flux reconcile` writes to ask for a reconcile now (fluxcd/pkg apis/meta annotations.go). */
export const RECONCILE_REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';

/**
 * When the controller handles the object's reconcile request: once it runs again (after an etcd
 * recovery, from the controllers' restart), for `reconcileMs`.
 */
function requestWindow(cluster: SimCluster, obj: FluxObjectState): { start: number; end: number } | undefined {
  const request = obj.reconcileRequest;
  if (request === undefined) return undefined;
  const start = Math.max(request.at, cluster.kube.controllersRestartedAt ?? request.at);
  return { start, end: start + request.reconcileMs };
}

/**
 * A Kustomization's reconciles after an etcd recovery or a request: kustomize-controller marks Ready
 * Unknown at the start of every reconcile, unchanged or not, and Ready=True "Applied revision" at its
 * end, so each reconcile moves lastTransitionTime (kustomization_controller.go v1.9.4 `reconcile`;
 * fluxcd/pkg runtime/conditions setter.go v0.110.1). Returns the reconcile running now, if any, and
 * the end of the last one finished.
 */
function kustomizationReconciles(cluster: SimCluster, obj: FluxObjectState, now: number): { runningSince?: number; lastEnd?: number } {
  const windows: { start: number; end: number }[] = [];
  const { controllersRestartedAt, fluxReconciledAt } = cluster.kube;
  if (controllersRestartedAt !== undefined && fluxReconciledAt !== undefined)
    windows.push({ start: controllersRestartedAt, end: fluxReconciledAt });
  const requested = requestWindow(cluster, obj);
  if (requested !== undefined) windows.push(requested);
  const running = windows.filter((w) => w.start <= now && now < w.end).sort((a, b) => b.start - a.start)[0];
  const ended = windows.filter((w) => w.end <= now).sort((a, b) => b.end - a.end)[0];
  return { runningSince: running?.start, lastEnd: ended?.end };
}

/**
 * `status.lastHandledReconcileAt`: the request's value once the controller has run after it; both
 * controllers copy the annotation in a deferred status patch that runs on every reconcile, suspended
 * objects too (helmrelease_controller.go v1.6.3 `Reconcile`, kustomization_controller.go v1.9.4
 * `finalizeStatus`). A request the controllers have not run for yet leaves the earlier value.
 */
export function lastHandled(cluster: SimCluster, obj: FluxObjectState, now: number): string {
  const request = obj.reconcileRequest;
  const window = requestWindow(cluster, obj);
  if (request !== undefined && window !== undefined && now >= window.end) return request.token;
  // Stable across reads: the value of a request handled before the simulation began.
  return request?.previous ?? timestamp(cluster.createdAt - 300_000);
}

/** The revision the source offers next: a new commit, or the next chart patch. */
function nextRevision(obj: FluxObjectState): string {
  if (obj.kind === 'HelmRelease') {
    const [major, minor, patch] = obj.revision.split('.');
    return `${major}.${minor}.${Number(patch ?? 0) + 1}`;
  }
  const branch = obj.revision.includes('@') ? obj.revision.slice(0, obj.revision.indexOf('@')) : 'main';
  return `${branch}@sha1:${createHash('sha1').update(`${obj.name}/${obj.revision}/next`).digest('hex')}`;
}

function digestOf(seed: string): string {
  return `sha256:${createHash('sha256').update(seed).digest('hex')}`;
}

const WEIGHT: Record<string, number> = { Stalled: 0, Reconciling: 1, Ready: 2 };

function sorted(conditions: Json[]): Json[] {
  const weight = (c: Json): number => WEIGHT[String(c['type'])] ?? 3;
  return [...conditions].sort((a, b) => weight(a) - weight(b) || String(a['type']).localeCompare(String(b['type'])));
}

/**
 * A client wrote `reconcile.fluxcd.io/requestedAt=<token>`: the controller's watch sees the annotation
 * change and reconciles (fluxcd/pkg runtime/predicates ReconcileRequestedPredicate); the status keeps
 * the earlier value until it has run.
 */
export function requestReconcile(cluster: SimCluster, obj: FluxObjectState, token: string, now: number, reconcileMs: number): void {
  if (obj.reconcileRequest?.token === token) return;
  obj.reconcileRequest = { token, at: now, reconcileMs, previous: lastHandled(cluster, obj, now) };
}

/** The object's annotations: the last reconcile request written through the API. */
function annotations(obj: FluxObjectState): Json {
  return obj.reconcileRequest === undefined ? {} : { annotations: { [RECONCILE_REQUESTED_AT]: obj.reconcileRequest.token } };
}

export function renderFlux(cluster: SimCluster, obj: FluxObjectState, now: number): Json {
  const isKs = obj.kind === 'Kustomization';
  const reconciles = isKs ? kustomizationReconciles(cluster, obj, now) : {};
  const faulted = phaseOf(cluster, obj.name);
  // An etcd recovery or a request makes a Kustomization reconcile anew: Ready=Unknown until it is done.
  const { phase, failingForMs } =
    faulted.phase === 'ready' && reconciles.runningSince !== undefined ? { phase: 'restarted' as Phase, failingForMs: 0 } : faulted;
  // A reconciliation in progress works on a spec change it has not finished with; suspending is a spec change too.
  const generation = phase === 'progressing' || phase === 'suspended' ? obj.generation + 1 : obj.generation;
  // observedGeneration moves only with Ready=True; a suspended object's stale Ready=True still moves it.
  const observedGeneration = phase === 'suspended' ? generation : obj.generation;
  const condition = (type: string, status: string, reason: string, message: string, at: number): Json => ({
    type,
    status,
    reason,
    message,
    observedGeneration: generation,
    lastTransitionTime: timestamp(at),
  });
  const applied = obj.revision;
  // AccessDenied stops at the source, before lastAttemptedRevision is written.
  const attempted =
    phase === 'ready' || phase === 'suspended' || phase === 'restarted' || (isKs && phase === 'stalled') ? applied : nextRevision(obj);
  // The last Ready=True transition: a Kustomization's is the end of its last reconcile (long ago, or after an
  // etcd recovery or a request). A HelmRelease in sync keeps its Ready as it was: helm-controller marks Ready
  // Unknown only before a release action, and an in-sync release has none (atomic_release.go v1.6.3,
  // ReleaseStatusInSync), so neither a recovery nor a request moves its lastTransitionTime.
  const readySince = isKs ? (reconciles.lastEnd ?? now - 2 * HOUR) : cluster.createdAt - 2 * HOUR;
  const restartedAt = reconciles.runningSince ?? now;
  const failingSince = now - failingForMs;
  // Between retries the failure flipped Ready to False at the end of the last attempt; each flip is a new time.
  const flippedAt = now - Math.min(40_000, failingForMs);
  const retryStartedAt = now - 3_000;
  const attempts = Math.max(1, Math.floor(failingForMs / (7 * 60_000)));
  const release = `${obj.namespace}/${obj.name}.v${obj.generation + 1}`;
  const conditions: Json[] = [];

  if (isKs) {
    const healthFailure = `health check failed after 5m0.0s: timeout waiting for: [Deployment/apps/podinfo status: 'InProgress']`;
    const healthRunning = `Running health checks for revision ${attempted} with a timeout of ${TIMEOUT}`;
    switch (phase) {
      case 'ready':
      case 'suspended':
        conditions.push(condition('Ready', 'True', 'ReconciliationSucceeded', `Applied revision: ${applied}`, readySince));
        break;
      case 'restarted':
        conditions.push(
          condition('Reconciling', 'True', 'Progressing', 'Reconciliation in progress', restartedAt),
          condition('Ready', 'Unknown', 'Progressing', 'Reconciliation in progress', restartedAt),
        );
        break;
      case 'stalled':
        conditions.push(
          condition(
            'Ready',
            'False',
            'AccessDenied',
            "cross-namespace references are not allowed: can't access 'GitRepository/infra/flux-system'",
            failingSince,
          ),
          condition(
            'Stalled',
            'True',
            'AccessDenied',
            "cross-namespace references are not allowed: can't access 'GitRepository/infra/flux-system'",
            failingSince,
          ),
        );
        break;
      case 'failed':
        conditions.push(
          condition('Reconciling', 'True', 'ProgressingWithRetry', healthRunning, flippedAt),
          condition('Ready', 'False', 'HealthCheckFailed', healthFailure, flippedAt),
          condition('Healthy', 'False', 'HealthCheckFailed', healthFailure, flippedAt),
        );
        break;
      case 'retrying':
        conditions.push(
          condition('Reconciling', 'True', 'Progressing', healthRunning, now - 1_000),
          condition('Ready', 'Unknown', 'Progressing', 'Reconciliation in progress', retryStartedAt),
          condition('Healthy', 'Unknown', 'Progressing', healthRunning, now - 1_000),
        );
        break;
      case 'progressing':
        conditions.push(
          condition(
            'Reconciling',
            'True',
            'Progressing',
            `Detecting drift for revision ${attempted} with a timeout of ${TIMEOUT}`,
            now - 1_000,
          ),
          condition('Ready', 'Unknown', 'Progressing', 'Reconciliation in progress', now - 5_000),
        );
        break;
    }
    const appliedDigest = digestOf(`${obj.name}/${applied}`);
    const history: Json[] = [];
    if (phase === 'failed' || phase === 'retrying') {
      history.push({
        digest: digestOf(`${obj.name}/${attempted}`),
        firstReconciled: timestamp(failingSince),
        lastReconciled: timestamp(phase === 'failed' ? flippedAt : now - 7 * 60_000 + 40_000),
        lastReconciledDuration: TIMEOUT,
        lastReconciledStatus: 'HealthCheckFailed',
        totalReconciliations: attempts,
        metadata: { revision: attempted },
      });
    }
    history.push({
      digest: appliedDigest,
      firstReconciled: timestamp(cluster.createdAt),
      lastReconciled: timestamp(phase === 'ready' || phase === 'suspended' ? now - 5 * 60_000 : failingSince - 60_000),
      lastReconciledDuration: '2.1s',
      lastReconciledStatus: 'ReconciliationSucceeded',
      totalReconciliations: 12,
      metadata: { revision: applied },
    });
    return {
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: obj.kind,
      metadata: meta(cluster, obj.kind, obj.name, obj.namespace, cluster.createdAt, {
        generation,
        finalizers: ['finalizers.fluxcd.io'],
        ...annotations(obj),
      }),
      spec: {
        interval: '10m0s',
        retryInterval: RETRY,
        path: obj.path,
        prune: true,
        wait: true,
        sourceRef: { kind: 'GitRepository', name: 'flux-system' },
        timeout: TIMEOUT,
        ...(phase === 'suspended' ? { suspend: true } : {}),
      },
      status: {
        conditions: sorted(conditions),
        observedGeneration,
        lastAppliedRevision: applied,
        lastAttemptedRevision: attempted,
        history,
        lastHandledReconcileAt: lastHandled(cluster, obj, now),
      },
    };
  }

  const chart = `${obj.chart}@${attempted}`;
  const upgradeFailed = `Helm upgrade failed for release ${release} with chart ${chart}: context deadline exceeded`;
  const running = `Running 'upgrade' action with timeout of ${TIMEOUT}`;
  let failures = 0;
  switch (phase) {
    case 'ready':
    case 'suspended': {
      const ok = `Helm upgrade succeeded for release ${obj.namespace}/${obj.name}.v${obj.generation} with chart ${obj.chart}@${applied}`;
      conditions.push(
        condition('Ready', 'True', 'UpgradeSucceeded', ok, readySince),
        condition('Released', 'True', 'UpgradeSucceeded', ok, readySince),
      );
      break;
    }
    case 'stalled':
      // Default remediation has no retries: the first failed upgrade exhausts them (RetriesExceeded).
      failures = 1;
      conditions.push(
        condition('Stalled', 'True', 'RetriesExceeded', 'Failed to upgrade after 1 attempt(s)', failingSince),
        condition('Ready', 'False', 'UpgradeFailed', upgradeFailed, failingSince),
        condition('Released', 'False', 'UpgradeFailed', upgradeFailed, failingSince),
      );
      break;
    case 'failed':
      // Infinite remediation retries (`retries: -1`): never Stalled, ProgressingWithRetry between attempts.
      failures = attempts;
      conditions.push(
        condition('Reconciling', 'True', 'ProgressingWithRetry', upgradeFailed, flippedAt),
        condition('Ready', 'False', 'UpgradeFailed', upgradeFailed, flippedAt),
        condition('Released', 'False', 'UpgradeFailed', upgradeFailed, flippedAt),
      );
      break;
    case 'retrying':
      failures = attempts;
      conditions.push(
        condition('Reconciling', 'True', 'Progressing', running, retryStartedAt),
        condition('Ready', 'Unknown', 'Progressing', running, retryStartedAt),
        condition('Released', 'False', 'UpgradeFailed', upgradeFailed, now - 7 * 60_000),
      );
      break;
    case 'progressing':
      conditions.push(
        condition('Reconciling', 'True', 'Progressing', running, now - 5_000),
        condition('Ready', 'Unknown', 'Progressing', running, now - 5_000),
      );
      break;
  }
  const retrying = phase === 'failed' || phase === 'retrying';
  return {
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: obj.kind,
    metadata: meta(cluster, obj.kind, obj.name, obj.namespace, cluster.createdAt, {
      generation,
      finalizers: ['finalizers.fluxcd.io'],
      ...annotations(obj),
    }),
    spec: {
      interval: '30m0s',
      chart: {
        spec: { chart: obj.chart, version: attempted, sourceRef: { kind: 'HelmRepository', name: obj.chart, namespace: 'flux-system' } },
      },
      ...(retrying ? { upgrade: { remediation: { retries: -1 } } } : {}),
      ...(phase === 'suspended' ? { suspend: true } : {}),
    },
    status: {
      conditions: sorted(conditions),
      observedGeneration,
      lastAttemptedRevision: attempted,
      lastAttemptedGeneration: generation,
      ...(failures > 0 ? { failures, upgradeFailures: failures, lastAttemptedReleaseAction: 'upgrade' } : {}),
      lastHandledReconcileAt: lastHandled(cluster, obj, now),
    },
  };
}
