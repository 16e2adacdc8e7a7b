import { describe, expect, it } from 'vitest';
import { evaluateFlux, FluxObject } from '../../src/health/rules/flux.ts';

interface Options {
  generation?: number;
  observedGeneration?: number;
  suspend?: boolean;
  conditions?: { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }[];
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

  it('fails on Stalled=True with its reason and message', () => {
    const stalled = flux('apps', {
      conditions: [
        { type: 'Ready', status: 'False', reason: 'InvalidCELExpression', message: 'healthCheckExprs: undeclared reference' },
        { type: 'Stalled', status: 'True', reason: 'InvalidCELExpression', message: 'healthCheckExprs: undeclared reference' },
      ],
    });

    const result = evaluateFlux([stalled], []);

    expect(result.status).toBe('failed');
    expect(result.evidence).toEqual(['Kustomization flux-system/apps: Stalled=True (InvalidCELExpression: healthCheckExprs: undeclared reference)']);
    expect(result.summary).toBe(
      'Flux is stalled: Kustomization flux-system/apps: Stalled=True (InvalidCELExpression: healthCheckExprs: undeclared reference)',
    );
  });

  it('fails on Ready=False for the reconciled generation', () => {
    const failed = flux('podinfo', { conditions: [{ type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: 'Helm upgrade failed: timed out' }] });

    expect(evaluateFlux([], [failed]).evidence).toEqual(['HelmRelease flux-system/podinfo: Ready=False (UpgradeFailed: Helm upgrade failed: timed out)']);
  });

  it('does not call an object stalled that Flux is still reconciling', () => {
    const reconciling = flux('apps', {
      generation: 4,
      conditions: [
        { type: 'Reconciling', status: 'True', reason: 'Progressing', message: 'Reconciliation in progress', lastTransitionTime: ago(5_000) },
        { type: 'Ready', status: 'Unknown', reason: 'Progressing', message: 'Reconciliation in progress', lastTransitionTime: ago(5_000) },
      ],
    });

    const result = evaluateFlux([reconciling], [], { now: NOW });

    expect(result.status).toBe('warning');
    expect(result.evidence).toEqual(['Kustomization flux-system/apps: Ready=Unknown (Progressing: Reconciliation in progress): reconciliation in progress']);
  });

  it('treats Ready=False inside the stall window as a retry, not a stall', () => {
    const retrying = flux('podinfo', {
      conditions: [
        { type: 'Reconciling', status: 'True', reason: 'ProgressingWithRetry', message: 'Detecting drift', lastTransitionTime: ago(30_000) },
        { type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: 'timed out waiting for the condition', lastTransitionTime: ago(30_000) },
      ],
    });

    const result = evaluateFlux([], [retrying], { now: NOW, stallMs: 10 * 60_000 });

    expect([result.status, result.evidence]).toEqual([
      'warning',
      ['HelmRelease flux-system/podinfo: Ready=False (UpgradeFailed: timed out waiting for the condition) for 30 s; reconciling, stalled if it lasts 10 min'],
    ]);
  });

  it('calls Ready=False stalled once it has lasted longer than the window', () => {
    const failing = flux('podinfo', {
      conditions: [
        { type: 'Reconciling', status: 'True', reason: 'ProgressingWithRetry', lastTransitionTime: ago(3_600_000) },
        { type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: 'timed out', lastTransitionTime: ago(3_600_000) },
      ],
    });

    const result = evaluateFlux([], [failing], { now: NOW, stallMs: 10 * 60_000 });

    expect(result.status).toBe('failed');
    expect(result.summary).toBe('Flux is stalled: HelmRelease flux-system/podinfo: Ready=False (UpgradeFailed: timed out) for 60 min (stall window 10 min)');
  });

  it('uses the window it is given', () => {
    const failing = flux('apps', { conditions: [{ type: 'Ready', status: 'False', reason: 'BuildFailed', lastTransitionTime: ago(20 * 60_000) }] });

    expect(evaluateFlux([failing], [], { now: NOW, stallMs: 30 * 60_000 }).status).toBe('warning');
    expect(evaluateFlux([failing], [], { now: NOW, stallMs: 15 * 60_000 }).status).toBe('failed');
  });

  it('only warns when Ready=False belongs to an older generation', () => {
    const newer = flux('apps', { generation: 4, observedGeneration: 3, conditions: [{ type: 'Ready', status: 'False', reason: 'BuildFailed' }] });

    const result = evaluateFlux([newer], []);

    expect(result.status).toBe('warning');
    expect(result.evidence).toEqual([
      'Kustomization flux-system/apps: Ready=False (BuildFailed) on an earlier generation; generation 4 not reconciled yet (observed 3)',
    ]);
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
      const reconciling = flux('apps', { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'Progressing', lastTransitionTime: ago(5_000) }] });

      const result = evaluateFlux([reconciling], [], { now: NOW, mode: 'final' });

      expect([result.status, result.settling, result.summary]).toEqual(['failed', true, 'Flux is not ready: Kustomization flux-system/apps: Ready=Unknown (Progressing): reconciliation in progress']);
    });

    it('fails a stalled object outright, without waiting', () => {
      const stalled = flux('apps', { conditions: [{ type: 'Stalled', status: 'True', reason: 'AccessDenied' }] });

      const result = evaluateFlux([stalled], [], { now: NOW, mode: 'final' });

      expect([result.status, result.settling]).toEqual(['failed', undefined]);
    });

    it('passes when every object that is not suspended is Ready', () => {
      expect(evaluateFlux([flux('apps'), flux('infra', { suspend: true })], [flux('podinfo')], { now: NOW, mode: 'final' }).status).toBe('passed');
    });
  });

  it('fails on an object it cannot read instead of skipping it', () => {
    expect(evaluateFlux([{ metadata: {} }], []).evidence).toEqual(['Kustomization #1: unreadable object (no metadata.name)']);
  });
});
