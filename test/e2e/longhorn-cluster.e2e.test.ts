/**
 * A cluster on the runbook's design, end to end through Slack: three hyperconverged control
 * planes with Longhorn (its instance-manager budgets at 0 by design, a detached volume), Cilium
 * and Flux. The gate judges Longhorn's budgets by Longhorn's drain policy and replica health,
 * still stops on a workload's budget at 0, and the upgrade's final verification wants Cilium,
 * Flux and pods ready after each node and at the end.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { productionShape, stagingShape, type ClusterFaults } from '../sim/index.ts';
import { runGate, type GateRun } from '../support/gate-run.ts';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';
import {
  approve,
  approveUntilDone,
  clickStart,
  requestUpgrade,
  waitForApprovalMatching,
  waitForApprovalRequest,
} from '../support/upgrade-flow.ts';

/** Both clusters on the latest patch of their minor, so an upgrade to the next minor is allowed. */
const CLUSTERS = [stagingShape({ talosVersion: 'v1.11.6' }), productionShape({ talosVersion: 'v1.11.6' })];
const TARGET = 'v1.12.11';

/** How the gate's thread marks a check: the icon of its own reply, or of its line among the passing checks. */
function iconOf(run: GateRun, title: string): string {
  const line = run.replies
    .flatMap((r) => r.text.split('\n'))
    .find((l) => /^(✅|❌|⚠️) /.test(l) && l.replace(/^\S+ /, '').startsWith(title));
  if (line === undefined) throw new Error(`no line of the thread names ${title}`);
  return line.split(' ')[0]!;
}

/** What the gate says of a check: its own reply when it failed or warned, else its section of the evidence file. */
function detailOf(run: GateRun, title: string): string {
  const own = run.replies.find((r) => /^(❌|⚠️) /.test(r.text) && r.text.replace(/^\S+ /, '').startsWith(title));
  return own === undefined ? evidenceOf(run, title) : `${own.text}${JSON.stringify(own.blocks ?? [])}`;
}

/** A check's section of the gate's evidence file: its verdict, its result and its evidence, and no other check's. */
function evidenceOf(run: GateRun, title: string): string {
  const found = run.evidence
    .split('\n\n')
    .find((s) => /^(PASSED|FAILED|WARNING) {2}/.test(s) && s.replace(/^\S+ {2}/, '').startsWith(title));
  if (found === undefined) throw new Error(`no evidence of ${title}`);
  return found;
}

function upgradeCalls(h: Harness, since: number): string[] {
  return h.sim.calls
    .slice(since)
    .filter((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade')
    .map((c) => c.argv[c.argv.indexOf('--nodes') + 1] ?? '');
}

describe('the health gate on a Longhorn cluster', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ clusters: CLUSTERS });
  });

  afterAll(async () => {
    await h?.stop();
  });

  beforeEach(() => {
    h.sim.faults.clear('production');
  });

  async function gateWith(faults: ClusterFaults): Promise<GateRun> {
    h.sim.faults.set('production', faults);
    return runGate(h);
  }

  it("passes on the healthy cluster: Longhorn's budgets at 0 are judged by Longhorn's drain policy", async () => {
    const run = await runGate(h);

    expect(run.root.text).toContain('✅ Health gate passed: production');
    expect(iconOf(run, 'PodDisruptionBudgets')).toBe('✅');
    const pdb = detailOf(run, 'PodDisruptionBudgets');
    expect(pdb).toContain("3 Longhorn instance-manager budgets judged by Longhorn's node-drain-policy block-if-contains-last-replica");
    expect(pdb).toContain("Longhorn's instance manager on talos-prd-cp-2 (10.0.30.12)");
  });

  it("stops on a workload's budget at 0 and names the budget and the node", async () => {
    const run = await gateWith({ pdbBlocked: ['postgres'] });

    expect(run.root.text).toContain('❌ Health gate failed: production');
    expect(iconOf(run, 'PodDisruptionBudgets')).toBe('❌');
    const pdb = detailOf(run, 'PodDisruptionBudgets');
    expect(pdb).toMatch(/PDB apps\/postgres: disruptionsAllowed=0 .* runs? on talos-prd-cp-\d \(10\.0\.30\.1\d\)/);
  });

  it('stops where a node holds the last healthy replica of a volume, naming node and volume', async () => {
    const run = await gateWith({ longhornReplicaFailed: { 'postgres-1': ['talos-prd-cp-1', 'talos-prd-cp-2'] } });

    expect(iconOf(run, 'PodDisruptionBudgets')).toBe('❌');
    const pdb = detailOf(run, 'PodDisruptionBudgets');
    expect(pdb).toContain('talos-prd-cp-3 holds the last healthy replica of');
    expect(pdb).toContain('replica of apps/postgres-1 (volume pvc-');
    expect(pdb).toContain('talos-prd-cp-3 (10.0.30.13)');
  });

  it('lets the same replicas pass under node-drain-policy always-allow', async () => {
    const run = await gateWith({
      longhornReplicaFailed: { 'postgres-1': ['talos-prd-cp-1', 'talos-prd-cp-2'] },
      longhornDrainPolicy: 'always-allow',
    });

    expect(iconOf(run, 'PodDisruptionBudgets')).toBe('✅');
  });

  it('stops on a Flux object that failed its last attempt even though its Ready transition is seconds old, and only warns on one applying for the first time', async () => {
    const run = await gateWith({ fluxReconciling: ['apps'], fluxFailingRecently: ['podinfo'] });

    expect(run.root.text).toContain('❌ Health gate failed: production');
    expect(iconOf(run, 'Flux')).toBe('❌');
    const flux = detailOf(run, 'Flux');
    expect(flux).toContain('HelmRelease apps/podinfo: Ready=False (UpgradeFailed');
    expect(flux).toMatch(
      /Kustomization flux-system\/apps: revision .* attempted, .* applied, attempted for \d+ s; reconciliation in progress/,
    );
  });

  it('does not call Flux failing while it only applies a new revision', async () => {
    const run = await gateWith({ fluxReconciling: ['apps', 'longhorn'] });

    expect(run.root.text).toContain('✅ Health gate passed: production');
    expect(iconOf(run, 'Flux')).toBe('⚠️');
    const flux = detailOf(run, 'Flux');
    expect(flux).toContain('flux-system/apps');
    expect(flux).toContain('longhorn-system/longhorn');
  });

  it('warns, without stopping, where a budget has more pods on one node than it lets go (staging: one schedulable worker)', async () => {
    const run = await runGate(h, CHANNELS.staging);

    expect(run.root.text).toContain('✅ Health gate passed: staging');
    expect(iconOf(run, 'PodDisruptionBudgets')).toBe('⚠️');
    expect(detailOf(run, 'PodDisruptionBudgets')).toMatch(
      /PDB apps\/podinfo: allows 1 disruption but 2 of its pods run on talos-stg-w-1 \(10\.0\.20\.205\)/,
    );
  });

  it('refuses an upgrade whose drain a workload budget would block, naming the node, and touches nothing', async () => {
    h.sim.faults.set('production', { pdbBlocked: ['postgres'] });
    const since = h.sim.calls.length;

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toMatch(/apps\/postgres.*talos-prd-cp-\d \(10\.0\.30\.1\d\)/);
    expect(upgradeCalls(h, since)).toEqual([]);
  });
});

describe('a Talos upgrade of a Longhorn cluster', () => {
  let h: Harness;

  // A fresh estate per test: upgrades change the simulated cluster for good.
  beforeEach(async () => {
    h = await startHarness({ clusters: CLUSTERS });
  });

  afterEach(async () => {
    await h?.stop();
  });

  it("completes: Longhorn lifts each node's budget for its drain and puts it back, nothing blocks, Cilium, Flux and pods verified", async () => {
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    expect(plan.root.text).toContain('planned');

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    const longhorn = h.sim.events.filter(
      (e) => e.kind === 'longhorn-pdb-deleted' || e.kind === 'longhorn-pdb-created' || e.kind === 'drain-blocked',
    );
    expect(longhorn.map((e) => [e.kind, e.node])).toEqual(
      ['10.0.30.11', '10.0.30.12', '10.0.30.13'].flatMap((node) => [
        ['longhorn-pdb-deleted', node],
        ['longhorn-pdb-created', node],
      ]),
    );
    const thread = h.slack
      .thread(CHANNELS.production, plan.root.ts)
      .map((m) => m.text)
      .join('\n');
    expect(thread).toContain('health gate passed with Cilium, Flux and pods ready');
    expect(thread).toContain('Cilium healthy, Flux ready, pods ready');
  });

  it('stops after the first node when pods stay not ready past the settle window', async () => {
    // notification-controller has no budget and no check of its own (talosctl health judges CoreDNS);
    // ready when the gate before the upgrade ran, so its failure is a regression only readiness catches.
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    h.sim.faults.set('production', { podsNotReady: ['notification-controller'] });

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11']);
    const thread = h.slack
      .thread(CHANNELS.production, plan.root.ts)
      .map((m) => m.text + JSON.stringify(m.blocks ?? []))
      .join('\n');
    expect(thread).toContain('the health gate after 10.0.30.11 failed');
    expect(thread).toMatch(/still not ready after the 3 s settle window: .*flux-system\/notification-controller-/);
  });

  it('stops after the first node when a Cilium agent is not ready', async () => {
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    // After the gate before the upgrade, which refuses a Cilium pod that is not ready (see test/e2e/baseline.e2e.test.ts).
    h.sim.faults.set('production', { ciliumAgentNotReady: ['10.0.30.13'] });

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11']);
    const thread = h.slack
      .thread(CHANNELS.production, plan.root.ts)
      .map((m) => m.text + JSON.stringify(m.blocks ?? []))
      .join('\n');
    expect(thread).toContain('Cilium is not healthy: agent ready on 2 of 3 nodes');
  });

  it("stops after the first node when Cilium 1.18's envoy DaemonSet is not ready on a node", async () => {
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    // After the gate before the upgrade, which refuses a Cilium pod that is not ready (see test/e2e/baseline.e2e.test.ts).
    h.sim.faults.set('production', { ciliumEnvoyNotReady: ['10.0.30.12'] });

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11']);
    const thread = h.slack
      .thread(CHANNELS.production, plan.root.ts)
      .map((m) => m.text + JSON.stringify(m.blocks ?? []))
      .join('\n');
    expect(thread).toContain('Cilium is not healthy: envoy ready on 2 of 3 nodes');
  });
});

describe("Longhorn's eviction and attachments, and CloudNativePG, through an upgrade", () => {
  let h: Harness;

  // Production runs a three-instance CloudNativePG database beside Longhorn; a fresh estate per test.
  beforeEach(async () => {
    h = await startHarness({
      clusters: [
        CLUSTERS[0]!,
        productionShape({
          talosVersion: 'v1.11.6',
          cnpg: [{ name: 'db', namespace: 'apps', instances: 3, podAntiAffinityType: 'required' }],
        }),
      ],
    });
  });

  afterEach(async () => {
    await h?.stop();
  });

  it('under block-for-eviction plans the wait for Longhorn to rebuild the replicas, and completes with every replica moved and nothing blocked', async () => {
    h.sim.faults.set('production', { longhornDrainPolicy: 'block-for-eviction' });
    const cluster = h.sim.cluster('production');
    // Two replicas per volume, so Longhorn has a node to rebuild each evicted replica on.
    for (const volume of cluster.kube.volumes) volume.replicas = ['talos-prd-cp-1', 'talos-prd-cp-2'];
    const since = h.sim.calls.length;

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    expect(plan.root.text).toContain('planned');
    expect(JSON.stringify(plan.root.blocks)).toContain('node-drain-policy block-for-eviction: the drain waits while Longhorn rebuilds');

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    expect(h.sim.events.filter((e) => e.kind === 'drain-blocked').map((e) => [e.node, e.detail])).toEqual([]);
    expect(h.sim.events.filter((e) => e.kind === 'longhorn-replica-evicted').length).toBeGreaterThan(0);
  });

  it('refuses an upgrade where a DaemonSet pod keeps a Longhorn volume attached, naming the volume, and touches nothing', async () => {
    const cluster = h.sim.cluster('production');
    cluster.kube.pods.push({
      name: 'log-shipper-q7x2m',
      namespace: 'apps',
      nodeName: 'talos-prd-cp-2',
      labels: { app: 'log-shipper' },
      owner: { kind: 'DaemonSet', name: 'log-shipper' },
      image: 'fluent/fluent-bit:4.0',
      createdAt: Date.now(),
    });
    cluster.kube.volumes.push({
      name: 'pvc-logs-2',
      pvcName: 'logs-talos-prd-cp-2',
      namespace: 'apps',
      replicas: ['talos-prd-cp-1', 'talos-prd-cp-2', 'talos-prd-cp-3'],
      sizeBytes: 1024 ** 3,
      attachedTo: 'talos-prd-cp-2',
      podName: 'log-shipper-q7x2m',
    });
    const since = h.sim.calls.length;

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toContain(
      'apps/logs-talos-prd-cp-2 (volume pvc-logs-2) stays attached to apps/log-shipper-q7x2m, which the drain does not evict',
    );
    expect(upgradeCalls(h, since)).toEqual([]);
  });

  it('passes the gate with the primary budget at 0, announces the switchover, and completes with the primary moved off each node before its drain', async () => {
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    expect(plan.root.text).toContain('planned');
    expect(JSON.stringify(plan.root.blocks)).toContain(
      'The primary of apps/db moves to db-2 (on talos-prd-cp-2) when talos-prd-cp-1 drains',
    );

    await clickStart(h, plan);
    // The first node's card says what its drain does, as the plan announced it; the next node's says nothing of that move.
    const request = await waitForApprovalRequest(h, plan);
    const card = JSON.stringify(h.slack.versions(CHANNELS.production, request.ts)[0]!.blocks);
    expect(card).toContain('*Drain:* The primary of apps/db moves to db-2 (on talos-prd-cp-2) when talos-prd-cp-1 drains');
    await approve(h, request);
    const next = await waitForApprovalMatching(h, plan, /talos-prd-cp-2/);
    expect(JSON.stringify(h.slack.versions(CHANNELS.production, next.ts)[0]!.blocks)).not.toContain('when talos-prd-cp-1 drains');
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    expect(h.sim.events.filter((e) => e.kind === 'drain-blocked').map((e) => [e.node, e.detail])).toEqual([]);
    const db = h.sim.cluster('production').kube.cnpg?.[0];
    // Where a drain found the primary on its node, CloudNativePG first moved it to a ready replica
    // elsewhere (db-1, back on the upgraded talos-prd-cp-1, when talos-prd-cp-2 drained); by the
    // drain of talos-prd-cp-3 the primary ran on another node.
    expect(db?.switchovers.map((s) => [s.from, s.to, s.node])).toEqual([
      ['db-1', 'db-2', 'talos-prd-cp-1'],
      ['db-2', 'db-1', 'talos-prd-cp-2'],
    ]);
  });

  it('refuses an upgrade of a cluster with a single-instance CloudNativePG database, naming it', async () => {
    await h.stop();
    h = await startHarness({
      clusters: [CLUSTERS[0]!, productionShape({ talosVersion: 'v1.11.6', cnpg: [{ name: 'solo', namespace: 'apps', instances: 1 }] })],
    });
    const since = h.sim.calls.length;

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toContain('apps/solo is a single-instance CloudNativePG Cluster');
    expect(upgradeCalls(h, since)).toEqual([]);
  });
});

describe('a pod without a controller on a node to drain', () => {
  let h: Harness;

  // Staging stays below Talos 1.13 (the node drains itself and skips such pods); production runs 1.13,
  // whose upgrade drains from talosctl with the kubectl drain library and Force.
  beforeAll(async () => {
    h = await startHarness({ clusters: [stagingShape({ talosVersion: 'v1.11.6' }), productionShape({ talosVersion: 'v1.13.9' })] });
    for (const [cluster, node] of [
      ['staging', 'talos-stg-w-1'],
      ['production', 'talos-prd-cp-2'],
    ] as const) {
      h.sim.cluster(cluster).kube.pods.push({
        name: 'debug-shell',
        namespace: 'apps',
        nodeName: node,
        labels: { run: 'debug-shell' },
        owner: { kind: 'None', name: '' },
        image: 'busybox:1.37',
        createdAt: Date.now(),
      });
    }
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('stops the gate on Talos 1.13, where the drain deletes it for good, naming the pod and the node', async () => {
    const run = await runGate(h);

    expect(run.root.text).toContain('❌ Health gate failed: production');
    expect(iconOf(run, 'PodDisruptionBudgets')).toBe('❌');
    const pdb = detailOf(run, 'PodDisruptionBudgets');
    expect(pdb).toContain(
      'pod apps/debug-shell on talos-prd-cp-2 (10.0.30.12) has no controller: the Talos ≥ 1.13 drain deletes it and nothing recreates it',
    );
  });

  it('lets the gate pass below Talos 1.13, where the drain skips it', async () => {
    const run = await runGate(h, CHANNELS.staging);

    expect(run.root.text).toContain('✅ Health gate passed: staging');
    expect(evidenceOf(run, 'PodDisruptionBudgets')).not.toContain('debug-shell');
  });
});
