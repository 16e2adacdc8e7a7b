import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { productionShape, stagingShape } from '../sim/shapes.ts';
import {
  approve,
  approveUntilDone,
  clickStart,
  originalButtonValue,
  requestUpgrade,
  waitForApprovalRequest,
  waitForRootState,
} from '../support/upgrade-flow.ts';

const FROM = 'v1.11.6';
const TARGET = 'v1.12.11';
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

interface Button {
  action_id: string;
  value: string;
  confirm?: { text: { text: string } };
}

describe('a stop says where things stand', () => {
  it('lists each node as the stop found it, what the bot did not touch, and a Cancel that frees the cluster and leaves the nodes', async () => {
    // Arrange: the second control plane comes back on the target but never Ready
    h = await startHarness();
    const harness = h;
    expect(harness.sim.node('production', '10.0.30.13').talosVersion).toBe(FROM);
    harness.sim.faults.set('production', { upgradeStaysNotReady: ['10.0.30.12'] });
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);

    // Act
    const done = await approveUntilDone(harness, plan);

    // Assert: the stop leads with the nodes, each as the cluster shows it
    expect(done.text).toContain('stopped at the first failure');
    const stop = harness.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped'))!;
    const blocks = stop.blocks as { type: string; text?: { text: string }; block_id?: string; elements?: Button[] }[];
    // The reply may carry an earlier entry first (the approval it followed): the stop's own blocks start at its headline.
    const at = blocks.findIndex((b) => b.text?.text.startsWith('❌ Stopped') === true);
    expect(blocks[at]!.text!.text).toMatch(/^❌ Stopped at control plane talos-prd-cp-2/);
    const rows = blocks[at + 1]!.text!.text.split('\n');
    const cordoned = (address: string): string => (harness.sim.node('production', address).cordoned ? 'cordoned' : 'not cordoned');
    expect(rows).toEqual([
      '*Nodes now*:',
      `• talos-prd-cp-1 (10.0.30.11): ${TARGET} · Ready · ${cordoned('10.0.30.11')} · upgraded by this operation`,
      `• talos-prd-cp-2 (10.0.30.12): ${TARGET} · NotReady · ${cordoned('10.0.30.12')} · upgrade requested by this operation, then stopped`,
      `• talos-prd-cp-3 (10.0.30.13): ${FROM} · Ready · not cordoned · not touched by this operation`,
    ]);
    expect(cordoned('10.0.30.11')).toBe('not cordoned');
    expect(JSON.stringify(blocks[at + 2])).toContain(
      'The bot did not touch talos-prd-cp-3. Not run: verify every node runs the target, final health gate.',
    );
    // The safe next actions: a Retry saying what it would do, a Rollback of the node the upgrade changed, and a Cancel saying what it releases
    const buttons = blocks.filter((b) => b.type === 'actions').flatMap((b) => b.elements!);
    expect(buttons.map((b) => b.action_id)).toEqual(['talos-op-retry', 'talos-node-rollback', 'talos-op-cancel']);
    expect(buttons[0]!.confirm!.text.text).toContain('Retry looks at 10.0.30.12 first');
    expect(buttons[2]!.confirm!.text.text).toContain('releases the lock on production; the nodes stay as they are');

    // Act: the operator cancels from the stop
    await harness.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: stop.ts,
      actionId: 'talos-op-cancel',
      value: buttons[2]!.value,
    });

    // Assert: the operation ends, the cluster is free, and no node was touched by the cancel
    await waitForRootState(harness, plan, /cancelled/);
    await harness.slack.waitFor(() =>
      harness.slack.ephemerals().find((e) => e.user === USERS.alice && /is free for the next operation/.test(e.text)),
    );
    expect(await harness.command('status')).toContain('no operation holds it');
    expect([1, 1, 0]).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13'].map((a) => harness.sim.upgradeCount('production', a)));
    expect(harness.sim.node('production', '10.0.30.12').talosVersion).toBe(TARGET);
  }, 180_000);

  it('offers a Retry that says what it does when the drain of the second node fails, and shows that node cordoned', async () => {
    // Arrange: Talos 1.13 nodes, whose client drains (cmd/talosctl/cmd/talos/upgrade.go v1.13.9)
    const from = 'v1.13.8';
    const target = 'v1.13.9';
    h = await startHarness({ clusters: [stagingShape({ talosVersion: from }), productionShape({ talosVersion: from })] });
    const harness = h;
    // The second node's upgrade request is held at talosctl until the budget changed: between the check before and the drain.
    const held = harness.sim.holdCalls(
      'production',
      (call, command) => command === 'upgrade' && call.argv[call.argv.indexOf('--nodes') + 1] === '10.0.30.12',
    );
    const plan = await requestUpgrade(harness, `upgrade talos ${target}`);
    await clickStart(harness, plan);
    const first = await waitForApprovalRequest(harness, plan);
    await approve(harness, first);
    const second = await harness.slack.waitFor(
      () => {
        const request = harness.slack
          .thread(CHANNELS.production, plan.root.ts)
          .filter(
            (m) =>
              m.ts !== first.ts &&
              JSON.stringify(harness.slack.message(CHANNELS.production, m.ts)?.blocks ?? []).includes('talos-step-approve'),
          );
        return request.at(-1);
      },
      { timeoutMs: 60_000, description: 'the approval request of the second node' },
    );
    // Act: once the second node's upgrade is requested (its budgets were judged fine just before), a podinfo pod
    // runs on it and its budget keeps both pods, so no eviction of the drain goes through.
    await approve(harness, second);
    await held.reached;
    const kube = harness.sim.cluster('production').kube;
    kube.pods.find((p) => p.labels['app'] === 'podinfo')!.nodeName = 'talos-prd-cp-2';
    kube.pdbs.find((p) => p.name === 'podinfo')!.minAvailable = 2;
    held.release();
    const stop = await harness.slack.waitFor(
      () => harness.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped')),
      { timeoutMs: 60_000, description: 'the stop' },
    );

    // Assert
    const blocks = stop.blocks as { type: string; text?: { text: string }; elements?: Button[] }[];
    const at = blocks.findIndex((b) => b.text?.text.startsWith('❌ Stopped') === true);
    expect(blocks[at + 1]!.text!.text.split('\n')).toEqual([
      '*Nodes now*:',
      `• talos-prd-cp-1 (10.0.30.11): ${target} · Ready · not cordoned · upgraded by this operation`,
      `• talos-prd-cp-2 (10.0.30.12): ${from} · Ready · cordoned · upgrade requested by this operation, then stopped`,
      `• talos-prd-cp-3 (10.0.30.13): ${from} · Ready · not cordoned · not touched by this operation`,
    ]);
    expect(harness.sim.node('production', '10.0.30.12').cordoned).toBe(true);
    const buttons = blocks.filter((b) => b.type === 'actions').flatMap((b) => b.elements!);
    expect(buttons.map((b) => b.action_id)).toEqual(['talos-op-retry', 'talos-op-cancel']);
    expect(buttons[0]!.confirm!.text.text).toContain(
      'Retry runs talosctl upgrade on 10.0.30.12 again: the image is installed again, then the drain',
    );
    expect(harness.sim.upgradeCount('production', '10.0.30.13')).toBe(0);
  });

  it('recommends one action and says why, with etcd, who may click, what Cancel leaves; its Retry, clicked, finishes the upgrade', async () => {
    // Arrange: the second control plane comes back on the target, but its kubelet is not Ready within the bound
    h = await startHarness({ env: { NODE_READY_TIMEOUT_SECONDS: '6' } });
    const harness = h;
    harness.sim.faults.set('production', { upgradeStaysNotReady: ['10.0.30.12'] });
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan, USERS.alice);

    // Act: carol approves each control plane until the stop
    const stopped = await approveUntilDone(harness, plan, CHANNELS.production, USERS.carol);

    // Assert: what happened, where the cluster stands (etcd included), the one recommended action and who may click
    expect(stopped.text).toContain('stopped at the first failure');
    const stop = harness.slack.thread(CHANNELS.production, plan.root.ts).findLast((m) => m.text.includes('❌ Stopped'))!;
    const blocks = stop.blocks as {
      type: string;
      block_id?: string;
      text?: { text: string };
      elements?: (Button & { text: { text: string } })[];
    }[];
    const byId = (id: string): string =>
      JSON.stringify(blocks.find((b) => b.block_id === id)?.text?.text ?? blocks.find((b) => b.block_id === id));
    const headline = blocks.find((b) => b.text?.text.startsWith('❌ Stopped') === true)!.text!.text;
    expect(headline).toMatch(
      /^❌ Stopped at control plane talos-prd-cp-2 [\s\S]* <@U0ALICE> started it; <@U0CAROL> approved last, <!date\^/,
    );
    expect(byId('stop-etcd')).toMatch(/\*etcd\*: \d of 3 members healthy.* · quorum 2 · (survives|quorum is lost)/);
    expect(byId('stop-recommended')).toContain(
      `*Recommended: Retry talos-prd-cp-2*: talos-prd-cp-2 already runs ${TARGET}: it looks at talos-prd-cp-2 again and runs only the checks after it; it never re-sends the upgrade.`,
    );
    expect(byId('stop-who')).toContain(
      'Who may click: Retry: operators or approvers · Roll back: operators (an approver then approves it) · Cancel: operators or approvers.',
    );
    expect(JSON.stringify(blocks)).toContain(
      `the nodes stay as they are (talos-prd-cp-1, talos-prd-cp-2 on ${TARGET}; talos-prd-cp-3 on ${FROM}), nothing is undone`,
    );
    expect(JSON.stringify(blocks)).toContain(`To continue later: \`/talos upgrade talos ${TARGET} production\``);
    const buttons = blocks.filter((b) => b.type === 'actions').flatMap((b) => b.elements!);
    expect(buttons.map((b) => [b.action_id, b.text.text])).toEqual([
      ['talos-op-retry', 'Retry talos-prd-cp-2'],
      ['talos-node-rollback', 'Roll back talos-prd-cp-2'],
      ['talos-op-cancel', 'Cancel'],
    ]);
    expect(stop.text).toContain('Recommended: Retry talos-prd-cp-2:');

    // Act: the kubelet recovers; alice clicks the recommended Retry, and carol approves again
    harness.sim.faults.clear('production', 'upgradeStaysNotReady');
    harness.sim.node('production', '10.0.30.12').kubeletNotReady = false;
    await harness.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: stop.ts,
      actionId: 'talos-op-retry',
      value: originalButtonValue(harness, CHANNELS.production, stop.ts, 'talos-op-retry'),
    });
    await harness.slack.waitFor(
      () => !/stopped at the first failure/.test(harness.slack.message(CHANNELS.production, plan.root.ts)!.text),
      {
        description: 'the root no longer stopped',
      },
    );
    const done = await approveUntilDone(harness, plan, CHANNELS.production, USERS.carol);

    // Assert: completed, and the Retry sent no second upgrade to talos-prd-cp-2
    expect(done.text).toContain('completed');
    expect(['10.0.30.11', '10.0.30.12', '10.0.30.13'].map((a) => harness.sim.upgradeCount('production', a))).toEqual([1, 1, 1]);
    expect(harness.slack.message(CHANNELS.production, stop.ts)!.text).toMatch(/^(#\d+ )?🔁 Retry requested by <@U0ALICE>/);
  }, 180_000);
});
