import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import {
  approve,
  approveUntilDone,
  clickStart,
  originalButtonValue,
  requestUpgrade,
  waitForApprovalRequest,
} from '../support/upgrade-flow.ts';
import { productionShape, stagingShape } from '../sim/shapes.ts';

// Talos 1.13 nodes with a matching 1.13 client: talosctl upgrade takes the LifecycleService path
// (cmd/talosctl/cmd/talos/upgrade.go v1.13.9), which drains on the client and checks nothing about etcd.
const FROM = 'v1.13.8';
const TARGET = 'v1.13.9';
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function thread(harness: Harness, channel: string, rootTs: string): string {
  return harness.slack
    .thread(channel, rootTs)
    .map((m) => `${m.text}${JSON.stringify(m.blocks ?? [])}`)
    .join('\n');
}

function upgradeCalls(harness: Harness): string[][] {
  return harness.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv.includes('upgrade')).map((c) => c.argv);
}

describe('Talos upgrade on 1.13 nodes with a 1.13 client', () => {
  it('goes through the new path on every node and completes, each node uncordoned on the new version', async () => {
    h = await startHarness({ clusters: [stagingShape({ talosVersion: FROM }), productionShape({ talosVersion: FROM })] });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);

    const done = await approveUntilDone(h, plan);

    expect(done.text).toMatch(/completed/i);
    for (const address of ['10.0.30.11', '10.0.30.12', '10.0.30.13']) {
      const node = h.sim.node('production', address);
      expect([address, node.talosVersion, node.cordoned, h.sim.upgradeCount('production', address)]).toEqual([address, TARGET, false, 1]);
    }
    // Client-side drain and the LifecycleService: nothing of the legacy server-side flow, and the 1.13.8 client ran it.
    const calls = h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv.includes('upgrade'));
    expect(calls.map((c) => c.clientVersion)).toEqual([FROM, FROM, FROM]);
    expect(calls.every((c) => !c.argv.includes('--legacy') && !c.argv.includes('--drain=false'))).toBe(true);
    expect(h.sim.events.some((e) => e.kind === 'upgrade-rejected')).toBe(false);
    // Each node's progress reply was posted while it ran (before its result) and ends on the node's result.
    const harness = h;
    const progress = harness.slack.thread(CHANNELS.production, plan.root.ts).filter((m) => /^(⏳|✅) talos-prd-cp-\d /.test(m.text));
    expect(progress).toHaveLength(3);
    for (const reply of progress) {
      const versions = harness.slack.versions(CHANNELS.production, reply.ts).map((v) => v.text);
      expect(versions[0]).toMatch(/^⏳ /);
      // Edits are paced, so which phases show depends on their speed; at least one shows while the node is worked on.
      expect(versions.slice(0, -1).some((v) => /^⏳ talos-prd-cp-\d · (budgets for the drain|talosctl upgrade|checks after)/.test(v))).toBe(
        true,
      );
      expect(versions.at(-1)).toMatch(/^✅ talos-prd-cp-\d · v1\.13\.9 · Ready · etcd 3\/3 · gate ✓ · (under a minute|\d+ min)$/);
    }
  });

  it('stops at a drain that times out, says the node is cordoned with the image installed and not booted, and touches nothing after', async () => {
    h = await startHarness({ clusters: [stagingShape({ talosVersion: FROM }), productionShape({ talosVersion: FROM })] });
    const harness = h;
    // The upgrade request is held at talosctl until the budget changed: between the check before and the drain.
    const held = harness.sim.holdCalls(
      'production',
      (call, command) => command === 'upgrade' && call.argv[call.argv.indexOf('--nodes') + 1] === '10.0.30.11',
    );
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    const request = await waitForApprovalRequest(harness, plan);
    // Once the upgrade is requested (its budgets were judged fine just before): a podinfo pod runs on the first
    // control plane, and its budget now keeps both pods, so no eviction of the drain ever goes through.
    await approve(harness, request);
    await held.reached;
    const kube = harness.sim.cluster('production').kube;
    const budget = kube.pdbs.find((p) => p.name === 'podinfo');
    const pod = kube.pods.find((p) => p.labels['app'] === 'podinfo');
    expect([budget, pod].every((x) => x !== undefined)).toBe(true);
    pod!.nodeName = 'talos-prd-cp-1';
    budget!.minAvailable = 2;
    held.release();

    const stop = await harness.slack
      .waitFor(() => harness.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped')), {
        timeoutMs: 40_000,
        description: 'the stop',
      })
      .catch((error: unknown) => {
        console.log(
          thread(harness, CHANNELS.production, plan.root.ts),
          JSON.stringify(harness.sim.calls.filter((c) => c.argv.includes('upgrade'))),
          JSON.stringify(harness.sim.events),
        );
        throw error;
      });

    const text = `${stop.text}${JSON.stringify(stop.blocks ?? [])}`;
    expect(text).toContain('talosctl could not drain talos-prd-cp-1');
    expect(text).toMatch(/apps\/podinfo-[a-z0-9-]+ could not be evicted/);
    expect(text).toContain(`10.0.30.11 (talos-prd-cp-1) is cordoned, has ${TARGET} installed but not booted`);
    expect(text).toContain(`still runs ${FROM}`);
    expect(text).toContain('kubectl uncordon talos-prd-cp-1');
    expect(text).toContain('talos-op-retry');
    expect(text).not.toContain('talos-node-rollback');
    const node = harness.sim.node('production', '10.0.30.11');
    expect([node.talosVersion, node.cordoned, harness.sim.installedNotBooted('production', '10.0.30.11')]).toEqual([FROM, true, TARGET]);
    expect(upgradeCalls(harness)).toHaveLength(1);
    expect(harness.sim.upgradeCount('production', '10.0.30.12')).toBe(0);
    expect(harness.sim.upgradeCount('production', '10.0.30.13')).toBe(0);

    // The budget fixed, Retry installs and drains again after a fresh approval, and the node ends upgraded and schedulable.
    budget!.minAvailable = 1;
    await harness.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: stop.ts,
      actionId: 'talos-op-retry',
      value: originalButtonValue(harness, CHANNELS.production, stop.ts, 'talos-op-retry'),
    });
    const again = await harness.slack.waitFor(
      () =>
        harness.slack
          .thread(CHANNELS.production, plan.root.ts)
          .filter((m) => m.ts !== request.ts && /"action_id":"talos-step-approve"/.test(JSON.stringify(m.blocks ?? [])))
          .at(0),
      { timeoutMs: 30_000, description: 'the approval asked again' },
    );
    await approve(harness, again);
    await harness.slack.waitFor(
      () => harness.sim.node('production', '10.0.30.11').talosVersion === TARGET && !harness.sim.node('production', '10.0.30.11').cordoned,
      {
        timeoutMs: 30_000,
        description: 'the node upgraded and uncordoned',
      },
    );
    expect(harness.sim.upgradeCount('production', '10.0.30.11')).toBe(2);
    expect(harness.sim.installedNotBooted('production', '10.0.30.11')).toBeUndefined();

    // The roll goes on to the end: the image was installed twice on the first node, but every node booted into the target once.
    const done = await approveUntilDone(harness, plan);
    expect(done.text).toMatch(/completed/);
    const boots = ['10.0.30.11', '10.0.30.12', '10.0.30.13'].map(
      (node) => harness.sim.events.filter((e) => e.kind === 'up' && e.node === node && e.toVersion === TARGET).length,
    );
    expect(boots).toEqual([1, 1, 1]);
  }, 180_000);

  it('refuses a control-plane step of a two-member etcd, since nothing on the 1.13 path would', async () => {
    const [cp1, cp2] = productionShape().nodes;
    h = await startHarness({
      clusters: [
        stagingShape({ talosVersion: FROM }),
        productionShape({ talosVersion: FROM, nodes: [cp1!, cp2!], endpoints: ['10.0.30.11', '10.0.30.12'] }),
      ],
    });
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    await approve(harness, await waitForApprovalRequest(harness, plan));

    const stop = await harness.slack.waitFor(
      () => harness.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped')),
      {
        timeoutMs: 60_000,
        description: 'the stop',
      },
    );

    expect(stop.text).toContain(
      'etcd would lose quorum while 10.0.30.11 reboots, so it was not touched: 2 members need 2 for quorum; while 10.0.30.11 reboots 1 other healthy member remains, which cannot keep quorum',
    );
    expect(upgradeCalls(harness)).toEqual([]);
    expect(harness.sim.upgradeCount('production', '10.0.30.11')).toBe(0);
    expect(harness.sim.upgradeCount('production', '10.0.30.12')).toBe(0);
  });

  it('asks the only control plane for its upgrade with --drain=false and --wait=false, then polls it back', async () => {
    const [cp] = stagingShape().nodes;
    h = await startHarness({
      clusters: [
        stagingShape({ talosVersion: FROM, nodes: [cp!], schedulingOnControlPlanes: true }),
        productionShape({ talosVersion: FROM }),
      ],
    });
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`, { channel: CHANNELS.staging });
    await clickStart(harness, plan, undefined, CHANNELS.staging);

    const done = await approveUntilDone(harness, plan, CHANNELS.staging);

    expect(done.text).toMatch(/completed/i);
    const calls = upgradeCalls(harness);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toEqual(expect.arrayContaining(['--wait=false', '--drain=false']));
    // The plan leads with the outage; how the bot copes (the flags) is in the maintenance record, not the plan.
    expect(JSON.stringify(plan.root.blocks)).toContain(
      '⚠ Only control plane: the Kubernetes API and etcd are down while talos-stg-cp-1 reboots',
    );
    expect(JSON.stringify(plan.root.blocks)).not.toContain('--drain=false');
    const record = await harness.slack.waitFor(
      () => harness.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`),
      { description: 'the maintenance record' },
    );
    expect(record.content).toContain('## How the bot ran it');
    expect(record.content).toContain('--drain=false');
    const node = harness.sim.node('staging', '10.0.20.204');
    expect([node.talosVersion, node.cordoned]).toEqual([TARGET, false]);
  });
});
