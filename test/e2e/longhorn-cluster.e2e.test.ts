/**
 * A cluster on the runbook's design, end to end through Slack: three hyperconverged control
 * planes with Longhorn (its instance-manager budgets at 0 by design, a detached volume), Cilium
 * and Flux. The gate judges Longhorn's budgets by Longhorn's drain policy and replica health,
 * still stops on a workload's budget at 0, and the upgrade's final verification wants Cilium,
 * Flux and pods ready after each node and at the end.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { productionShape, stagingShape, type ClusterFaults } from '../sim/index.ts';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';
import { approveUntilDone, clickStart, requestUpgrade } from '../support/upgrade-flow.ts';

/** Both clusters on the latest patch of their minor, so an upgrade to the next minor is allowed. */
const CLUSTERS = [stagingShape({ talosVersion: 'v1.11.6' }), productionShape({ talosVersion: 'v1.11.6' })];
const TARGET = 'v1.12.11';
const CHECKS = 8;

interface GateRun {
  root: Message;
  replies: Message[];
}

async function health(h: Harness, channel: string = CHANNELS.production): Promise<GateRun> {
  const before = h.slack.channelMessages(channel).length;
  await h.command('health', { channel });
  const root = await h.slack.waitFor(
    () => {
      const latest = h.slack.channelMessages(channel).slice(before)[0];
      if (!latest || !/Health gate (passed|failed)/.test(latest.text)) return undefined;
      return h.slack.thread(channel, latest.ts).length === CHECKS ? latest : undefined;
    },
    { timeoutMs: 30_000, description: 'a finished health gate' },
  );
  return { root, replies: h.slack.thread(channel, root.ts) };
}

function replyText(run: GateRun, title: string): string {
  const found = run.replies.find((r) => r.text.includes(title));
  if (!found) throw new Error(`no reply for ${title}`);
  return found.text + JSON.stringify(found.blocks ?? []);
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
    return health(h);
  }

  it("passes on the healthy cluster: Longhorn's budgets at 0 are judged by Longhorn's drain policy", async () => {
    const run = await health(h);

    expect(run.root.text).toContain('✅ Health gate passed: production');
    const pdb = replyText(run, 'PodDisruptionBudgets');
    expect(pdb).toMatch(/^✅/);
    expect(pdb).toContain("3 Longhorn instance-manager budgets judged by Longhorn's node-drain-policy block-if-contains-last-replica");
    expect(pdb).toContain("Longhorn's instance manager on talos-prd-cp-2 (10.0.30.12)");
  });

  it("stops on a workload's budget at 0 and names the budget and the node", async () => {
    const run = await gateWith({ pdbBlocked: ['postgres'] });

    expect(run.root.text).toContain('❌ Health gate failed: production');
    const pdb = replyText(run, 'PodDisruptionBudgets');
    expect(pdb).toMatch(/^❌/);
    expect(pdb).toMatch(/PDB apps\/postgres: disruptionsAllowed=0 .* runs? on talos-prd-cp-\d \(10\.0\.30\.1\d\)/);
  });

  it('stops where a node holds the last healthy replica of a volume, naming node and volume', async () => {
    const run = await gateWith({ longhornReplicaFailed: { 'postgres-1': ['talos-prd-cp-1', 'talos-prd-cp-2'] } });

    const pdb = replyText(run, 'PodDisruptionBudgets');
    expect(pdb).toMatch(/^❌/);
    expect(pdb).toContain('talos-prd-cp-3 holds the last healthy replica of');
    expect(pdb).toContain('(apps/postgres-1)');
    expect(pdb).toContain('talos-prd-cp-3 (10.0.30.13)');
  });

  it('lets the same replicas pass under node-drain-policy always-allow', async () => {
    const run = await gateWith({ longhornReplicaFailed: { 'postgres-1': ['talos-prd-cp-1', 'talos-prd-cp-2'] }, longhornDrainPolicy: 'always-allow' });

    expect(replyText(run, 'PodDisruptionBudgets')).toMatch(/^✅/);
  });

  it('stops on a Flux object that failed its last attempt even though its Ready transition is seconds old, and only warns on one applying for the first time', async () => {
    const run = await gateWith({ fluxReconciling: ['apps'], fluxFailingRecently: ['podinfo'] });

    expect(run.root.text).toContain('❌ Health gate failed: production');
    const flux = replyText(run, 'Flux');
    expect(flux).toMatch(/^❌/);
    expect(flux).toContain('HelmRelease apps/podinfo: Ready=False (UpgradeFailed');
    expect(flux).toMatch(/Kustomization flux-system\/apps: revision .* attempted, .* applied, attempted for \d+ s; reconciliation in progress/);
  });

  it('does not call Flux failing while it only applies a new revision', async () => {
    const run = await gateWith({ fluxReconciling: ['apps', 'longhorn'] });

    expect(run.root.text).toContain('✅ Health gate passed: production');
    const flux = replyText(run, 'Flux');
    expect(flux).toMatch(/^⚠️/);
    expect(flux).toContain('flux-system/apps');
    expect(flux).toContain('longhorn-system/longhorn');
  });

  it('warns, without stopping, where a budget has more pods on one node than it lets go (staging: one schedulable worker)', async () => {
    const run = await health(h, CHANNELS.staging);

    expect(run.root.text).toContain('✅ Health gate passed: staging');
    expect(replyText(run, 'PodDisruptionBudgets')).toMatch(/^⚠️.*PDB apps\/podinfo: allows 1 disruption but 2 of its pods run on talos-stg-w-1 \(10\.0\.20\.205\)/);
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
    const longhorn = h.sim.events.filter((e) => e.kind === 'longhorn-pdb-deleted' || e.kind === 'longhorn-pdb-created' || e.kind === 'drain-blocked');
    expect(longhorn.map((e) => [e.kind, e.node])).toEqual(
      ['10.0.30.11', '10.0.30.12', '10.0.30.13'].flatMap((node) => [
        ['longhorn-pdb-deleted', node],
        ['longhorn-pdb-created', node],
      ]),
    );
    const thread = h.slack.thread(CHANNELS.production, plan.root.ts).map((m) => m.text).join('\n');
    expect(thread).toContain('health gate passed with Cilium, Flux and pods ready');
    expect(thread).toContain('Cilium healthy, Flux ready, pods ready');
  });

  it('stops after the first node when pods stay not ready past the settle window', async () => {
    // notification-controller has no budget and no check of its own (talosctl health judges CoreDNS),
    // so the gate before the upgrade lets it through; only readiness catches it.
    h.sim.faults.set('production', { podsNotReady: ['notification-controller'] });
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11']);
    const thread = h.slack.thread(CHANNELS.production, plan.root.ts).map((m) => m.text + JSON.stringify(m.blocks ?? [])).join('\n');
    expect(thread).toContain('the health gate after 10.0.30.11 failed');
    expect(thread).toMatch(/still not ready after the 3 s settle window: .*flux-system\/notification-controller-/);
  });

  it('stops after the first node when a Cilium agent is not ready', async () => {
    h.sim.faults.set('production', { ciliumAgentNotReady: ['10.0.30.13'] });
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11']);
    const thread = h.slack.thread(CHANNELS.production, plan.root.ts).map((m) => m.text + JSON.stringify(m.blocks ?? [])).join('\n');
    expect(thread).toContain('Cilium is not healthy: agent ready on 2 of 3 nodes');
  });

  it("stops after the first node when Cilium 1.18's envoy DaemonSet is not ready on a node", async () => {
    h.sim.faults.set('production', { ciliumEnvoyNotReady: ['10.0.30.12'] });
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11']);
    const thread = h.slack.thread(CHANNELS.production, plan.root.ts).map((m) => m.text + JSON.stringify(m.blocks ?? [])).join('\n');
    expect(thread).toContain('Cilium is not healthy: envoy ready on 2 of 3 nodes');
  });
});
