import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { productionShape, stagingShape } from '../sim/shapes.ts';
import {
  approve,
  approveUntilDone,
  clickStart,
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
});
