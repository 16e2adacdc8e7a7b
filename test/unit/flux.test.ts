import { describe, expect, it } from 'vitest';
import { evaluateFlux, FluxObject } from '../../src/health/rules/flux.ts';

interface Options {
  generation?: number;
  observedGeneration?: number;
  suspend?: boolean;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
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

  it('fails on a Reconciling condition with ProgressingWithRetry', () => {
    const retrying = flux('apps', {
      conditions: [
        { type: 'Reconciling', status: 'True', reason: 'ProgressingWithRetry', message: 'Detecting drift for revision main@sha1:0a1b2c' },
        { type: 'Ready', status: 'Unknown', reason: 'Progressing' },
      ],
    });

    expect(evaluateFlux([retrying], []).status).toBe('failed');
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

  it('fails on an object it cannot read instead of skipping it', () => {
    expect(evaluateFlux([{ metadata: {} }], []).evidence).toEqual(['Kustomization #1: unreadable object (no metadata.name)']);
  });
});
