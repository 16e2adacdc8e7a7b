/**
 * The baseline through the real buttons: what was already unwell before a Talos upgrade of
 * production is recorded by the gate before it, tolerated after each node and at the end, and
 * named in the thread and the maintenance record; what gets worse, and anything unwell on the
 * node just upgraded, still stops the upgrade.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { barePod, deploymentPod } from '../sim/kube-seed.ts';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';
import { approveUntilDone, clickStart, requestUpgrade, waitForApprovalRequest } from '../support/upgrade-flow.ts';
import { storedOperation } from '../support/stored-operation.ts';

const TARGET = 'v1.12.11';
const IMAGE = 'ghcr.io/example/report-worker:1.4.0';
let h: Harness;

beforeEach(async () => {
  h = await startHarness();
});

afterEach(async () => {
  await h?.stop();
});

function upgradedNodes(since: number): string[] {
  return h.sim.calls
    .slice(since)
    .filter((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade')
    .map((c) => c.argv[c.argv.indexOf('--nodes') + 1]!);
}

function threadText(ts: string): string {
  return h.slack
    .thread(CHANNELS.production, ts)
    .map((m) => m.text + JSON.stringify(m.blocks ?? []))
    .join('\n');
}

/** An unrelated Deployment's pod (no budget) on talos-prd-cp-2; a drain moves it elsewhere under a new name. */
function seedWorker(): string {
  const pod = deploymentPod('production', 'reports', 'report-worker', 'talos-prd-cp-2', IMAGE, Date.now() - 3_600_000);
  h.sim.cluster('production').kube.pods.push(pod);
  return pod.name;
}

describe('a Talos upgrade of production against its baseline', () => {
  it('completes although an unrelated pod was crash-looping before it, and the record lists that pod', async () => {
    const name = seedWorker();
    h.sim.faults.set('production', { podsCrashLooping: ['report-worker'] });
    const since = h.sim.calls.length;

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    expect(JSON.stringify(plan.root.blocks)).toContain(`Already failing before the operation`);
    expect(JSON.stringify(plan.root.blocks)).toContain(`reports/${name}: CrashLoopBackOff`);
    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    expect(upgradedNodes(since)).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('completed');
    expect(op.baseline?.items).toEqual([
      expect.objectContaining({ kind: 'pod', name: `reports/${name}`, node: 'talos-prd-cp-2', reason: 'CrashLoopBackOff' }),
    ]);
    // The drain of talos-prd-cp-2 moved the pod; its replacement crash-loops too and is still the same failure.
    const moved = h.sim.cluster('production').kube.pods.find((p) => p.owner.name.startsWith('report-worker-'));
    expect(moved?.name).not.toBe(name);
    expect(op.steps.find((s) => s.kind === 'verify')?.detail).toContain(
      'already failing before the operation (not a stop): reports/report-worker-',
    );
    expect(op.audit.find((e) => e.event === 'preflight passed, plan posted')?.detail).toContain(
      `already failing before the operation: reports/${name}: CrashLoopBackOff on talos-prd-cp-2`,
    );
    expect(threadText(plan.root.ts)).toContain('already failing before the operation');
    const record = await h.slack.waitFor(() => h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`));
    expect(record?.content).toContain('## Already failing before the operation');
    expect(record?.content).toContain(`- pod: reports/${name}: CrashLoopBackOff on talos-prd-cp-2`);
  });

  it('stops after the first node when a pod that was well before the upgrade is not any more', async () => {
    seedWorker();
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    // Well when the gate before the operation ran; crash-looping from the first node on.
    h.sim.faults.set('production', { podsCrashLooping: ['report-worker'] });

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped');
    expect(upgradedNodes(since)).toEqual(['10.0.30.11']);
    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('failed');
    expect(op.baseline).toEqual({ takenAt: expect.any(String), items: [] });
    expect(op.reason).toBe('the health gate after 10.0.30.11 failed');
    expect(threadText(plan.root.ts)).toMatch(
      /still not ready after the 3 s settle window: .*not as before the operation: reports\/report-worker-\S+: CrashLoopBackOff/,
    );
  });

  it('stops after a node when a pod on it was already failing before: the node may be why', async () => {
    // A bare pod: nothing moves it, so it is on talos-prd-cp-1 when that node comes back.
    h.sim.cluster('production').kube.pods.push(barePod('reports', 'debug-shell', 'talos-prd-cp-1', IMAGE, Date.now() - 3_600_000));
    h.sim.faults.set('production', { podsCrashLooping: ['debug-shell'] });
    const since = h.sim.calls.length;

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped');
    expect(upgradedNodes(since)).toEqual(['10.0.30.11']);
    const op = await storedOperation(h, plan.opId);
    expect(op.baseline?.items.map((i) => i.name)).toEqual(['reports/debug-shell']);
    expect(op.reason).toBe('the health gate after 10.0.30.11 failed');
    expect(threadText(plan.root.ts)).toContain(
      'reports/debug-shell: CrashLoopBackOff on talos-prd-cp-1 (on a node just changed; it was already failing before the operation)',
    );
  });

  it('completes although an application HelmRelease was failing before it: a failure Flux retries is baseline, not a stop', async () => {
    // helm-controller retries without end (remediation retries -1): Ready=False UpgradeFailed, never Stalled.
    h.sim.faults.set('production', { fluxNotReady: ['podinfo'] });
    const since = h.sim.calls.length;

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    expect(JSON.stringify(plan.root.blocks)).toContain('Already failing before the operation');
    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    expect(upgradedNodes(since)).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('completed');
    expect(op.baseline?.items).toEqual([
      expect.objectContaining({
        key: 'flux:HelmRelease apps/podinfo#failing',
        kind: 'flux',
        name: 'HelmRelease apps/podinfo',
        reason: expect.stringContaining('Ready=False (UpgradeFailed'),
      }),
    ]);
    expect(op.steps.find((s) => s.kind === 'verify')?.detail).toContain(
      'already failing before the operation (not a stop): HelmRelease apps/podinfo',
    );
  });

  it('stops after the first node when an application HelmRelease that was Ready before fails during the upgrade', async () => {
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    // Ready when the gates before the operation and before starting ran; failing from the first node on.
    await waitForApprovalRequest(h, plan);
    h.sim.faults.set('production', { fluxNotReady: ['podinfo'] });
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped');
    expect(upgradedNodes(since)).toEqual(['10.0.30.11']);
    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('failed');
    expect(op.baseline).toEqual({ takenAt: expect.any(String), items: [] });
    expect(op.reason).toBe('the health gate after 10.0.30.11 failed');
    expect(threadText(plan.root.ts)).toMatch(/not as before the operation: HelmRelease apps\/podinfo: Ready=False \(UpgradeFailed/);
  });

  it('refuses when a Flux object is stalled, whatever the baseline: the runbook stops on it', async () => {
    h.sim.faults.set('production', { fluxStalled: ['podinfo'] });
    const since = h.sim.calls.length;

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('refused');
    expect(op.baseline).toBeUndefined();
    expect(op.refusals.join('\n')).toMatch(
      /the health gate failed: Flux is stalled: HelmRelease apps\/podinfo: Stalled=True \(RetriesExceeded/,
    );
    expect(upgradedNodes(since)).toEqual([]);
  });

  it("refuses when a pod of the cluster's own machinery is not ready: no baseline tolerates it", async () => {
    h.sim.faults.set('production', { ciliumAgentNotReady: ['10.0.30.13'] });
    const since = h.sim.calls.length;

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('refused');
    expect(op.baseline).toBeUndefined();
    expect(op.refusals.join('\n')).toMatch(
      /pod of the cluster's own machinery .* is not ready, which no baseline tolerates: kube-system\/cilium-\S+: Running but not ready \(0\/1\) on talos-prd-cp-3/,
    );
    expect(upgradedNodes(since)).toEqual([]);
  });
});
