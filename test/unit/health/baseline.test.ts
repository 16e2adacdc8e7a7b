import { describe, expect, it } from 'vitest';
import type { CheckResult, UnwellItem } from '../../../src/health/check-result.ts';
import {
  againstBaseline,
  alreadyFailingNote,
  Baseline,
  baselineRefusals,
  judgeAgainstBaseline,
  longhornItems,
  takeBaseline,
  unchangedSinceBaseline,
} from '../../../src/health/baseline.ts';
import type { GateReport } from '../../../src/health/health-gate.ts';

const AT = '2026-03-01T02:00:00.000Z';

function pod(name: string, node: string, reason = 'CrashLoopBackOff', stops = true, key = `pod:${name}`): UnwellItem {
  return { key, kind: 'pod', name, node, reason, stops };
}

function flux(label: string, reason: string, stops: boolean): UnwellItem {
  return { key: `flux:${label}`, kind: 'flux', name: label, reason, stops };
}

function check(id: string, status: CheckResult['status'], unwell?: UnwellItem[], settling?: boolean): CheckResult {
  return {
    id,
    title: id,
    status,
    summary: `${id} ${status}`,
    evidence: [],
    ...(unwell === undefined ? {} : { unwell }),
    ...(settling === undefined ? {} : { settling }),
  };
}

function report(checks: CheckResult[]): GateReport {
  const failed = checks.filter((c) => c.status === 'failed');
  return {
    cluster: 'production',
    passed: failed.length === 0,
    stopReasons: failed.map((c) => c.summary),
    checks,
    startedAt: AT,
    durationMs: 1,
    slowestProbeMs: 1,
  };
}

/** The gate before the operation, in standard mode: pods and Flux still reconciling are warnings. */
const BEFORE = report([
  check('nodes', 'passed'),
  check('pods', 'warning', [
    pod('apps/web-1', 'talos-w-2', 'CrashLoopBackOff', false, 'pod:apps/ReplicaSet/web'),
    pod('apps/batch-x', 'talos-w-1', 'Running but not ready (0/1)', false),
  ]),
  check('flux', 'warning', [flux('HelmRelease apps/web', 'Ready=Unknown: reconciliation in progress', false)]),
]);

describe('takeBaseline', () => {
  it('records every pod and Flux object the gate found unwell, with its reason and node, and the Longhorn volumes not healthy', () => {
    const volumes = [
      { metadata: { name: 'pvc-1' }, status: { state: 'attached', robustness: 'degraded', currentNodeID: 'talos-w-3' } },
      { metadata: { name: 'pvc-2' }, status: { state: 'attached', robustness: 'healthy', currentNodeID: 'talos-w-1' } },
      { metadata: { name: 'pvc-3' }, status: { state: 'detached', robustness: 'unknown' } },
    ];

    const baseline = takeBaseline(BEFORE, AT, volumes);

    expect(baseline).toEqual({
      takenAt: AT,
      items: [
        { key: 'pod:apps/ReplicaSet/web', kind: 'pod', name: 'apps/web-1', node: 'talos-w-2', reason: 'CrashLoopBackOff' },
        { key: 'pod:apps/batch-x', kind: 'pod', name: 'apps/batch-x', node: 'talos-w-1', reason: 'Running but not ready (0/1)' },
        {
          key: 'flux:HelmRelease apps/web',
          kind: 'flux',
          name: 'HelmRelease apps/web',
          reason: 'Ready=Unknown: reconciliation in progress',
        },
        { key: 'longhorn:pvc-1', kind: 'longhorn', name: 'volume pvc-1', node: 'talos-w-3', reason: 'degraded (attached)' },
      ],
    });
    // What is stored must read back through the operation's schema (a restarted bot keeps it).
    expect(Baseline.parse(JSON.parse(JSON.stringify(baseline)))).toEqual(baseline);
  });

  it('is empty for a healthy cluster', () => {
    expect(takeBaseline(report([check('pods', 'passed', []), check('nodes', 'passed')]), AT)).toEqual({ takenAt: AT, items: [] });
  });

  it('leaves the pods of the cluster machinery out: they are refusals, never tolerated', () => {
    const gate = report([
      check('pods', 'warning', [
        pod('kube-system/cilium-abc', 'talos-w-1', 'CrashLoopBackOff', false),
        pod('flux-system/helm-controller-x', 'talos-w-2', 'Running but not ready (0/1)', false),
        pod('longhorn-system/longhorn-manager-y', 'talos-w-2', 'CrashLoopBackOff', false),
        pod('apps/web-1', 'talos-w-3', 'CrashLoopBackOff', false),
      ]),
    ]);

    expect(takeBaseline(gate, AT).items.map((i) => i.name)).toEqual(['apps/web-1']);
    const refusals = baselineRefusals(gate);
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toContain('kube-system/cilium-abc: CrashLoopBackOff on talos-w-1');
    expect(refusals[0]).toContain('flux-system/helm-controller-x');
    expect(refusals[0]).toContain('longhorn-system/longhorn-manager-y');
    expect(refusals[0]).not.toContain('apps/web-1');
  });

  it('holds a failing Flux object and leaves a stalled one out: the runbook stops on stalled, whatever was before', () => {
    const failing = {
      ...flux('HelmRelease apps/web#failing', 'Ready=False (UpgradeFailed: timed out)', true),
      name: 'HelmRelease apps/web',
    };
    const stalled = {
      ...flux('Kustomization flux-system/apps#stalled', 'stalled: Stalled=True (AccessDenied: denied)', true),
      name: 'Kustomization flux-system/apps',
      neverBaseline: true,
    };
    const gate = report([check('flux', 'failed', [stalled, failing])]);

    expect(takeBaseline(gate, AT).items.map((i) => i.key)).toEqual(['flux:HelmRelease apps/web#failing']);
    expect(baselineRefusals(gate)).toEqual([
      'Flux is stalled, which the runbook stops on and no baseline tolerates: Kustomization flux-system/apps: stalled: Stalled=True (AccessDenied: denied)',
    ]);
    // Judged against its own baseline, the gate before the operation passes on the failing object alone.
    const before = report([check('flux', 'failed', [failing])]);
    const judged = againstBaseline(before, takeBaseline(before, AT), []);
    expect([judged.passed, judged.checks[0]?.status, judged.alreadyFailing]).toEqual([
      true,
      'warning',
      ['HelmRelease apps/web: Ready=False (UpgradeFailed: timed out)'],
    ]);
  });

  it('refuses nothing when only workloads are unwell', () => {
    expect(baselineRefusals(BEFORE)).toEqual([]);
  });

  it('reads a detached volume as well and an unreadable one not at all', () => {
    expect(longhornItems([{ status: {} }, { metadata: { name: 'pvc-9' }, status: { state: 'detached', robustness: 'unknown' } }])).toEqual(
      [],
    );
  });
});

describe('judgeAgainstBaseline', () => {
  const baseline = takeBaseline(BEFORE, AT);

  it('tolerates what was already failing, off the node just changed, even after a drain moved it under another name', () => {
    // The ReplicaSet's pod was evicted from talos-w-2 and crash-loops again on talos-w-3 under a new name.
    const after = report([
      check('nodes', 'passed'),
      check('pods', 'failed', [pod('apps/web-2', 'talos-w-3', 'CrashLoopBackOff', true, 'pod:apps/ReplicaSet/web')], true),
    ]);

    expect(judgeAgainstBaseline(baseline, after, { nodes: ['10.0.30.21', 'talos-w-1'] })).toEqual({
      regressions: [],
      alreadyFailing: ['apps/web-2: CrashLoopBackOff on talos-w-3'],
    });
  });

  it('stops on a pod that was well before and is not now', () => {
    const after = report([check('pods', 'failed', [pod('apps/api-1', 'talos-w-3', 'CrashLoopBackOff')], true)]);

    const judged = judgeAgainstBaseline(baseline, after, { nodes: ['talos-w-1'] });

    expect(judged.alreadyFailing).toEqual([]);
    expect(judged.regressions).toHaveLength(1);
    expect(judged.regressions[0]).toContain('apps/api-1: CrashLoopBackOff on talos-w-3');
  });

  it('stops on anything unwell on the node just changed, even when it was already failing before', () => {
    const after = report([check('pods', 'failed', [pod('apps/batch-x', 'talos-w-1', 'Running but not ready (0/1)')], true)]);

    const judged = judgeAgainstBaseline(baseline, after, { nodes: ['10.0.30.21', 'talos-w-1'] });

    expect(judged.alreadyFailing).toEqual([]);
    expect(judged.regressions).toHaveLength(1);
    expect(judged.regressions[0]).toContain('apps/batch-x: Running but not ready (0/1) on talos-w-1');
    expect(judged.regressions[0]).toContain('already failing before the operation');
  });

  it('tolerates as many pods of a ReplicaSet as were failing before, not one more', () => {
    const after = report([
      check(
        'pods',
        'failed',
        [
          pod('apps/web-2', 'talos-w-3', 'CrashLoopBackOff', true, 'pod:apps/ReplicaSet/web'),
          pod('apps/web-3', 'talos-w-2', 'CrashLoopBackOff', true, 'pod:apps/ReplicaSet/web'),
        ],
        true,
      ),
    ]);

    const judged = judgeAgainstBaseline(baseline, after, { nodes: [] });

    expect(judged.alreadyFailing).toEqual(['apps/web-2: CrashLoopBackOff on talos-w-3']);
    expect(judged.regressions).toHaveLength(1);
    expect(judged.regressions[0]).toContain('apps/web-3');
  });

  it('stops on a failed check that is not judged item by item, whatever the baseline holds', () => {
    const after = report([check('nodes', 'failed'), check('cilium', 'failed', undefined, true), check('etcd-status', 'failed')]);

    expect(judgeAgainstBaseline(baseline, after, { nodes: [] }).regressions).toEqual([
      'nodes failed',
      'cilium failed',
      'etcd-status failed',
    ]);
  });

  it('stops on a Flux object that fails now, while the one that was already reconciling is tolerated', () => {
    const after = report([
      check('flux', 'failed', [
        flux('HelmRelease apps/web', 'Ready=Unknown: reconciliation in progress', true),
        flux('Kustomization flux-system/apps', 'Ready=False (BuildFailed)', true),
      ]),
    ]);

    const judged = judgeAgainstBaseline(baseline, after, { nodes: [] });

    expect(judged.alreadyFailing).toEqual(['HelmRelease apps/web: Ready=Unknown: reconciliation in progress']);
    expect(judged.regressions).toHaveLength(1);
    expect(judged.regressions[0]).toContain('Kustomization flux-system/apps: Ready=False (BuildFailed)');
  });

  it('stops on a Flux object that was reconciling before and fails now: it got worse', () => {
    const failing: UnwellItem = {
      ...flux('HelmRelease apps/web', 'Ready=False (UpgradeFailed)', true),
      key: 'flux:HelmRelease apps/web#failing',
    };

    const judged = judgeAgainstBaseline(baseline, report([check('flux', 'failed', [failing])]), { nodes: [] });

    expect(judged.alreadyFailing).toEqual([]);
    expect(judged.regressions[0]).toContain('HelmRelease apps/web: Ready=False (UpgradeFailed)');
  });

  it('never stops on an item that does not fail its check (a warning), and lists it when it was already failing', () => {
    const after = report([check('pods', 'warning', [pod('apps/batch-x', 'talos-w-1', 'Running but not ready (0/1)', false)])]);

    expect(judgeAgainstBaseline(baseline, after, { nodes: ['talos-w-1'] }).regressions).toEqual([]);
    expect(judgeAgainstBaseline(baseline, after, { nodes: [] }).alreadyFailing).toEqual([
      'apps/batch-x: Running but not ready (0/1) on talos-w-1',
    ]);
  });

  it('stops on a failed check whose items do not explain its failure', () => {
    const after = report([check('pods', 'failed', [pod('apps/batch-x', 'talos-w-1', 'x', false)])]);

    expect(judgeAgainstBaseline(baseline, after, { nodes: [] }).regressions).toEqual(['pods failed']);
  });
});

describe('againstBaseline', () => {
  const baseline = takeBaseline(BEFORE, AT);

  it('turns a check whose only failures were already there into a warning that neither stops nor settles', () => {
    const after = report([
      check('nodes', 'passed'),
      check('pods', 'failed', [pod('apps/web-2', 'talos-w-3', 'CrashLoopBackOff', true, 'pod:apps/ReplicaSet/web')], true),
    ]);

    const judged = againstBaseline(after, baseline, ['talos-w-1']);

    expect(judged.passed).toBe(true);
    expect(judged.stopReasons).toEqual([]);
    expect(judged.checks[1]).toMatchObject({ id: 'pods', status: 'warning', settling: false });
    expect(judged.alreadyFailing).toEqual(['apps/web-2: CrashLoopBackOff on talos-w-3']);
    expect(alreadyFailingNote(judged)).toBe(
      '; already failing before the operation (not a stop): apps/web-2: CrashLoopBackOff on talos-w-3',
    );
  });

  it('keeps a check failed, still settling, with only its regressions as the stop reason', () => {
    const after = report([
      check(
        'pods',
        'failed',
        [pod('apps/web-2', 'talos-w-3', 'CrashLoopBackOff', true, 'pod:apps/ReplicaSet/web'), pod('apps/api-1', 'talos-w-3', 'Pending')],
        true,
      ),
    ]);

    const judged = againstBaseline(after, baseline, []);

    expect(judged.passed).toBe(false);
    expect(judged.checks[0]).toMatchObject({ status: 'failed', settling: true });
    expect(judged.stopReasons).toHaveLength(1);
    expect(judged.stopReasons[0]).toContain('apps/api-1: Pending on talos-w-3');
    expect(judged.stopReasons[0]).not.toContain('apps/web-2');
  });

  it('leaves the report as the gate made it without a baseline (an operation planned by an earlier version)', () => {
    const after = report([check('pods', 'failed', [pod('apps/web-2', 'talos-w-3')], true)]);

    expect(againstBaseline(after, undefined, [])).toBe(after);
    expect(alreadyFailingNote(after)).toBe('');
  });
});

describe('unchangedSinceBaseline', () => {
  const baseline = {
    takenAt: AT,
    items: [{ key: 'longhorn:pvc-1', kind: 'longhorn' as const, name: 'volume pvc-1', node: 'talos-w-3', reason: 'degraded (attached)' }],
  };
  const volume = { volume: 'volume pvc-1', name: 'pvc-1', robustness: 'degraded (attached)', rebuilding: [], errors: [] };

  it('lets a volume degraded before, and as degraded now, go unwaited while no node of the operation rebuilds it', () => {
    expect(unchangedSinceBaseline(volume, baseline, ['talos-w-1'])).toBe(true);
    expect(unchangedSinceBaseline({ ...volume, rebuilding: [{ node: 'talos-w-2', progress: 10 }] }, baseline, ['talos-w-1'])).toBe(true);
  });

  it('holds a volume the operation made worse, one not in the baseline, and any without a baseline', () => {
    expect(unchangedSinceBaseline({ ...volume, robustness: 'faulted (attached)' }, baseline, [])).toBe(false);
    expect(unchangedSinceBaseline({ ...volume, rebuilding: [{ node: 'talos-w-1', progress: 10 }] }, baseline, ['talos-w-1'])).toBe(false);
    expect(
      unchangedSinceBaseline({ ...volume, errors: ['rebuild of the replica on talos-w-1 failed: error'] }, baseline, ['talos-w-1']),
    ).toBe(false);
    expect(unchangedSinceBaseline({ ...volume, name: 'pvc-2' }, baseline, [])).toBe(false);
    expect(unchangedSinceBaseline(volume, undefined, [])).toBe(false);
  });
});
