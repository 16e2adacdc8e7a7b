import { describe, expect, it } from 'vitest';
import { evaluateFlux, FluxObject } from '../../../../src/health/rules/flux.ts';

interface Options {
  generation?: number;
  observedGeneration?: number;
  suspend?: boolean;
  conditions?: { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }[];
  lastAttemptedRevision?: string;
  lastAppliedRevision?: string;
  history?: {
    digest: string;
    firstReconciled: string;
    lastReconciled: string;
    lastReconciledStatus: string;
    metadata: Record<string, string>;
  }[];
}

const NOW = Date.parse('2026-11-30T12:00:00Z');

/** A timestamp `ms` before {@link NOW}, as Kubernetes writes it. */
function ago(ms: number): string {
  return new Date(NOW - ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function flux(name: string, options: Options = {}): FluxObject {
  return FluxObject.parse({
    metadata: { name, namespace: 'flux-system', generation: options.generation ?? 3 },
    spec: { suspend: options.suspend ?? false, path: `./apps/${name}` },
    status: {
      observedGeneration: options.observedGeneration ?? 3,
      ...(options.lastAttemptedRevision === undefined ? {} : { lastAttemptedRevision: options.lastAttemptedRevision }),
      ...(options.lastAppliedRevision === undefined ? {} : { lastAppliedRevision: options.lastAppliedRevision }),
      ...(options.history === undefined ? {} : { history: options.history }),
      conditions: options.conditions ?? [
        { type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded', message: 'Applied revision: main@sha1:0a1b2c' },
      ],
    },
  });
}

describe('evaluateFlux', () => {
  it('passes when everything is Ready', () => {
    expect(evaluateFlux([flux('apps'), flux('infra')], [flux('podinfo')])).toEqual({
      id: 'flux',
      title: 'Flux Kustomizations and HelmReleases',
      status: 'passed',
      summary: '2 Kustomizations and 1 HelmRelease: 3 Ready',
      evidence: [],
    });
  });

  it('fails on Stalled=True as stalled, with its reason and message, an item no baseline tolerates', () => {
    const stalled = flux('apps', {
      conditions: [
        { type: 'Ready', status: 'False', reason: 'InvalidCELExpression', message: 'healthCheckExprs: undeclared reference' },
        { type: 'Stalled', status: 'True', reason: 'InvalidCELExpression', message: 'healthCheckExprs: undeclared reference' },
      ],
    });

    const result = evaluateFlux([stalled], []);

    expect(result.status).toBe('failed');
    expect(result.evidence).toEqual([
      'Kustomization flux-system/apps: Stalled=True (InvalidCELExpression: healthCheckExprs: undeclared reference)',
    ]);
    expect(result.summary).toBe(
      'Flux is stalled: Kustomization flux-system/apps: Stalled=True (InvalidCELExpression: healthCheckExprs: undeclared reference)',
    );
    expect(result.unwell).toEqual([
      expect.objectContaining({ key: 'flux:Kustomization flux-system/apps#stalled', stops: true, neverBaseline: true }),
    ]);
  });

  it('fails on a retried failure as failing, an item a baseline may hold, and names a stalled object first', () => {
    const failed = flux('podinfo', {
      conditions: [
        { type: 'Reconciling', status: 'True', reason: 'ProgressingWithRetry', message: 'Helm upgrade failed: timed out' },
        { type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: 'Helm upgrade failed: timed out' },
      ],
    });
    const stalled = flux('apps', { conditions: [{ type: 'Stalled', status: 'True', reason: 'AccessDenied', message: 'denied' }] });

    const alone = evaluateFlux([], [failed]);
    const both = evaluateFlux([stalled], [failed]);

    expect([alone.status, alone.summary.startsWith('Flux is failing: HelmRelease flux-system/podinfo')]).toEqual(['failed', true]);
    expect(alone.unwell).toEqual([expect.objectContaining({ key: 'flux:HelmRelease flux-system/podinfo#failing', stops: true })]);
    expect(alone.unwell?.[0]?.neverBaseline).toBeUndefined();
    expect(both.summary).toMatch(
      /^Flux is stalled: Kustomization flux-system\/apps: Stalled=True .*; also failing: HelmRelease flux-system\/podinfo/,
    );
  });

  it('fails on Ready=False for the reconciled generation', () => {
    const failed = flux('podinfo', {
      conditions: [{ type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: 'Helm upgrade failed: timed out' }],
    });

    expect(evaluateFlux([], [failed]).evidence).toEqual([
      'HelmRelease flux-system/podinfo: Ready=False (UpgradeFailed: Helm upgrade failed: timed out)',
    ]);
  });

  it('does not call an object stalled that Flux is still reconciling', () => {
    const reconciling = flux('apps', {
      generation: 4,
      conditions: [
        {
          type: 'Reconciling',
          status: 'True',
          reason: 'Progressing',
          message: 'Reconciliation in progress',
          lastTransitionTime: ago(5_000),
        },
        { type: 'Ready', status: 'Unknown', reason: 'Progressing', message: 'Reconciliation in progress', lastTransitionTime: ago(5_000) },
      ],
    });

    const result = evaluateFlux([reconciling], [], { now: NOW });

    expect(result.status).toBe('warning');
    expect(result.evidence).toEqual([
      'Kustomization flux-system/apps: Ready=Unknown (Progressing: Reconciliation in progress): reconciliation in progress',
    ]);
  });

  it('fails on Ready=False with a failure reason however fresh its transition: every retry stamps a new one', () => {
    const retrying = flux('podinfo', {
      conditions: [
        {
          type: 'Reconciling',
          status: 'True',
          reason: 'ProgressingWithRetry',
          message: 'retrying after 1m0s',
          lastTransitionTime: ago(2_000),
        },
        {
          type: 'Ready',
          status: 'False',
          reason: 'UpgradeFailed',
          message: 'timed out waiting for the condition',
          lastTransitionTime: ago(2_000),
        },
      ],
    });

    const result = evaluateFlux([], [retrying], { now: NOW, stallMs: 10 * 60_000 });

    expect([result.status, result.evidence]).toEqual([
      'failed',
      ['HelmRelease flux-system/podinfo: Ready=False (UpgradeFailed: timed out waiting for the condition)'],
    ]);
  });

  it('fails on Reconciling=True ProgressingWithRetry even without Ready=False', () => {
    const retrying = flux('apps', {
      conditions: [
        {
          type: 'Reconciling',
          status: 'True',
          reason: 'ProgressingWithRetry',
          message: 'retrying after 2m0s',
          lastTransitionTime: ago(1_000),
        },
      ],
    });

    const result = evaluateFlux([retrying], [], { now: NOW });

    expect([result.status, result.evidence]).toEqual([
      'failed',
      ['Kustomization flux-system/apps: Reconciling=True (ProgressingWithRetry: retrying after 2m0s); no Ready condition'],
    ]);
  });

  it('fails a Kustomization caught at the start of a retry when its history records a failed attempt at the attempted revision', () => {
    // The retry has just set Ready=Unknown and Reconciling=True Progressing: only the revisions and the history tell.
    const retry = flux('apps', {
      lastAttemptedRevision: 'main@sha1:ffff',
      lastAppliedRevision: 'main@sha1:0a1b2c',
      history: [
        {
          digest: 'sha256:2',
          firstReconciled: ago(3_600_000),
          lastReconciled: ago(60_000),
          lastReconciledStatus: 'HealthCheckFailed',
          metadata: { revision: 'main@sha1:ffff' },
        },
        {
          digest: 'sha256:1',
          firstReconciled: ago(86_400_000),
          lastReconciled: ago(3_700_000),
          lastReconciledStatus: 'ReconciliationSucceeded',
          metadata: { revision: 'main@sha1:0a1b2c' },
        },
      ],
      conditions: [
        {
          type: 'Reconciling',
          status: 'True',
          reason: 'Progressing',
          message: 'Detecting drift for revision main@sha1:ffff',
          lastTransitionTime: ago(1_000),
        },
        { type: 'Ready', status: 'Unknown', reason: 'Progressing', message: 'Reconciliation in progress', lastTransitionTime: ago(3_000) },
      ],
    });

    const result = evaluateFlux([retry], [], { now: NOW });

    expect([result.status, result.evidence]).toEqual([
      'failed',
      [
        'Kustomization flux-system/apps: revision main@sha1:ffff attempted, main@sha1:0a1b2c applied: the last attempt failed (HealthCheckFailed), failing since 60 min ago',
      ],
    ]);
  });

  it('counts a revision attempted but not applied as failing once the attempt in progress is older than the window it is given', () => {
    // A health check with a long timeout: one attempt, Ready=Unknown since it started 20 minutes ago.
    const attempt = flux('apps', {
      lastAttemptedRevision: 'main@sha1:ffff',
      lastAppliedRevision: 'main@sha1:0a1b2c',
      conditions: [
        {
          type: 'Reconciling',
          status: 'True',
          reason: 'Progressing',
          message: 'Running health checks for revision main@sha1:ffff',
          lastTransitionTime: ago(1_000),
        },
        {
          type: 'Ready',
          status: 'Unknown',
          reason: 'Progressing',
          message: 'Reconciliation in progress',
          lastTransitionTime: ago(20 * 60_000),
        },
      ],
    });

    expect(evaluateFlux([attempt], [], { now: NOW, stallMs: 30 * 60_000 }).status).toBe('warning');
    const late = evaluateFlux([attempt], [], { now: NOW, stallMs: 15 * 60_000 });
    expect([late.status, late.evidence]).toEqual([
      'failed',
      [
        'Kustomization flux-system/apps: revision main@sha1:ffff attempted, main@sha1:0a1b2c applied for 20 min: not progressed within 15 min',
      ],
    ]);
    expect(late.unwell).toEqual([expect.objectContaining({ key: 'flux:Kustomization flux-system/apps#stalled', neverBaseline: true })]);
  });

  it('fails a HelmRelease caught at the start of a retry by its failure count', () => {
    const release = FluxObject.parse({
      metadata: { name: 'podinfo', namespace: 'apps', generation: 2 },
      status: {
        failures: 3,
        conditions: [
          {
            type: 'Ready',
            status: 'Unknown',
            reason: 'Progressing',
            message: "Running 'upgrade' action with timeout of 5m0s",
            lastTransitionTime: ago(2_000),
          },
        ],
      },
    });

    expect(evaluateFlux([], [release], { now: NOW }).evidence).toEqual([
      "HelmRelease apps/podinfo: 3 failed attempts at the desired state; Ready=Unknown (Progressing: Running 'upgrade' action with timeout of 5m0s)",
    ]);
  });

  it('only warns on a new revision being applied for the first time, with no failed attempt', () => {
    const applying = flux('apps', {
      lastAttemptedRevision: 'main@sha1:ffff',
      lastAppliedRevision: 'main@sha1:0a1b2c',
      conditions: [
        {
          type: 'Reconciling',
          status: 'True',
          reason: 'Progressing',
          message: 'Detecting drift for revision main@sha1:ffff',
          lastTransitionTime: ago(5_000),
        },
        { type: 'Ready', status: 'Unknown', reason: 'Progressing', message: 'Reconciliation in progress', lastTransitionTime: ago(5_000) },
      ],
    });

    const result = evaluateFlux([applying], [], { now: NOW });

    expect([result.status, result.evidence]).toEqual([
      'warning',
      [
        'Kustomization flux-system/apps: revision main@sha1:ffff attempted, main@sha1:0a1b2c applied, attempted for 5 s; reconciliation in progress',
      ],
    ]);
  });

  it('fails on Ready=False even while observedGeneration lags: the controllers set it only on Ready=True', () => {
    const newer = flux('apps', {
      generation: 4,
      observedGeneration: 3,
      conditions: [{ type: 'Ready', status: 'False', reason: 'BuildFailed', message: 'kustomize build failed' }],
    });

    expect(evaluateFlux([newer], []).evidence).toEqual([
      'Kustomization flux-system/apps: Ready=False (BuildFailed: kustomize build failed)',
    ]);
  });

  it('only warns while an object waits for a dependency, which is judged on its own', () => {
    const waiting = flux('apps', {
      conditions: [
        { type: 'Ready', status: 'False', reason: 'DependencyNotReady', message: "dependency 'flux-system/infra' is not ready" },
      ],
    });

    expect(evaluateFlux([waiting], []).status).toBe('warning');
  });

  it('only warns while reconciliation is in progress', () => {
    const progressing = flux('apps', {
      conditions: [
        { type: 'Reconciling', status: 'True', reason: 'Progressing', message: 'Reconciliation in progress' },
        { type: 'Ready', status: 'Unknown', reason: 'Progressing', message: 'Reconciliation in progress' },
      ],
    });

    const result = evaluateFlux([progressing], []);

    expect([result.status, result.evidence]).toEqual([
      'warning',
      ['Kustomization flux-system/apps: Ready=Unknown (Progressing: Reconciliation in progress): reconciliation in progress'],
    ]);
  });

  it('lists suspended objects without judging their stale conditions', () => {
    const suspended = flux('apps', { suspend: true, conditions: [{ type: 'Stalled', status: 'True', reason: 'AccessDenied' }] });

    const result = evaluateFlux([suspended, flux('infra')], []);

    expect(result).toEqual(
      expect.objectContaining({
        status: 'passed',
        summary: '2 Kustomizations and 0 HelmReleases: 1 Ready, 1 suspended',
        evidence: ['Kustomization flux-system/apps: suspended: not evaluated'],
      }),
    );
  });

  describe('in final mode', () => {
    it('fails as settling while an object is still reconciling', () => {
      const reconciling = flux('apps', {
        conditions: [{ type: 'Ready', status: 'Unknown', reason: 'Progressing', lastTransitionTime: ago(5_000) }],
      });

      const result = evaluateFlux([reconciling], [], { now: NOW, mode: 'final' });

      expect([result.status, result.settling, result.summary]).toEqual([
        'failed',
        true,
        'Flux is not ready: Kustomization flux-system/apps: Ready=Unknown (Progressing): reconciliation in progress',
      ]);
    });

    it('fails a stalled object outright, without waiting', () => {
      const stalled = flux('apps', { conditions: [{ type: 'Stalled', status: 'True', reason: 'AccessDenied' }] });

      const result = evaluateFlux([stalled], [], { now: NOW, mode: 'final' });

      expect([result.status, result.settling]).toEqual(['failed', undefined]);
    });

    it('passes when every object that is not suspended is Ready', () => {
      expect(evaluateFlux([flux('apps'), flux('infra', { suspend: true })], [flux('podinfo')], { now: NOW, mode: 'final' }).status).toBe(
        'passed',
      );
    });
  });

  it('fails on an object it cannot read instead of skipping it', () => {
    expect(evaluateFlux([{ metadata: {} }], []).evidence).toEqual(['Kustomization #1: unreadable object (no metadata.name)']);
  });

  it('names each object that is not Ready as an item, keyed apart when it fails, and whether it alone fails the check', () => {
    const reconciling = {
      metadata: { name: 'web', namespace: 'apps' },
      status: { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'Progressing' }] },
    };
    const failing = {
      metadata: { name: 'db', namespace: 'apps' },
      status: { conditions: [{ type: 'Ready', status: 'False', reason: 'UpgradeFailed' }] },
    };
    const suspended = { metadata: { name: 'old', namespace: 'apps' }, spec: { suspend: true } };
    const items = (mode: 'standard' | 'final') =>
      (evaluateFlux([], [reconciling, failing, suspended], { mode }).unwell ?? []).map((u) => [u.key, u.stops]);

    expect(items('standard')).toEqual([
      ['flux:HelmRelease apps/web', false],
      ['flux:HelmRelease apps/db#failing', true],
    ]);
    expect(items('final')).toEqual([
      ['flux:HelmRelease apps/web', true],
      ['flux:HelmRelease apps/db#failing', true],
    ]);
  });
});
