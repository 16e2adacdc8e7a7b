import { readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { approveUntilDone, clickStart, originalButtonValue, requestUpgrade, waitForRootState } from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
const NODES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** The control planes whose upgrade an approval request in the thread asked for, in order. */
function approvalsAskedFor(harness: Harness, rootTs: string): string[] {
  return harness.slack
    .thread(CHANNELS.production, rootTs)
    .map((m) => harness.slack.versions(CHANNELS.production, m.ts)[0]?.text ?? '')
    .flatMap((text) => /^#\d+ approval requested: (10\.0\.30\.\d+)$/m.exec(text)?.[1] ?? []);
}

const snapshotFiles = (harness: Harness): string[] =>
  readdirSync(harness.sim.cluster('production').snapshotDir).filter((f) => /^production-.*\.db$/.test(f));

describe('an upgrade stopped half-way, cancelled, then asked for again', () => {
  it('continues: the plan names the node already done, a new snapshot is taken, the rest are upgraded with approvals, each node once', async () => {
    h = await startHarness();
    const harness = h;

    // Arrange: the first upgrade upgrades 10.0.30.11, then talosctl upgrade of 10.0.30.12 is rejected.
    harness.sim.faults.set('production', { upgradeError: { '10.0.30.12': 'error validating installer image: unauthorized' } });
    const first = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, first);
    expect((await approveUntilDone(harness, first)).text).toContain('stopped at the first failure');
    expect(harness.sim.node('production', '10.0.30.11').talosVersion).toBe(TARGET);
    expect(harness.sim.node('production', '10.0.30.12').talosVersion).toBe('v1.11.6');
    // The stop's own Cancel button ends it and frees the cluster; the nodes stay as they are.
    const stop = harness.slack.thread(CHANNELS.production, first.root.ts).findLast((m) => m.text.includes('❌ Stopped'))!;
    await harness.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: stop.ts,
      actionId: 'talos-op-cancel',
      value: originalButtonValue(harness, CHANNELS.production, stop.ts, 'talos-op-cancel'),
    });
    await waitForRootState(harness, first, /cancelled/);
    harness.sim.faults.clear('production', 'upgradeError');
    const snapshotsBefore = snapshotFiles(harness);

    // Act
    const second = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    const planText = `${second.root.text}${JSON.stringify(second.root.blocks)}`;
    await clickStart(harness, second);
    const done = await approveUntilDone(harness, second);

    // Assert
    expect(second.root.text).toContain(`Talos upgrade v1.11.6 → ${TARGET} (continued): production`);
    expect(planText).toContain(`already on ${TARGET} from an earlier upgrade: talos-prd-cp-1 (10.0.30.11) by ${first.opId}`);
    expect(done.text).toContain('completed');
    expect(approvalsAskedFor(harness, second.root.ts)).toEqual(['10.0.30.12', '10.0.30.13']);
    for (const node of NODES) {
      expect(harness.sim.node('production', node).talosVersion).toBe(TARGET);
      expect(harness.sim.upgradeCount('production', node)).toBe(1);
    }
    const snapshotsAfter = snapshotFiles(harness);
    expect(snapshotsAfter.filter((f) => !snapshotsBefore.includes(f))).toHaveLength(1);
    expect(harness.slack.thread(CHANNELS.production, second.root.ts).some((m) => m.text.includes('etcd snapshot taken'))).toBe(true);
    const record = await harness.slack.waitFor(() =>
      harness.slack.uploadedFiles().find((f) => f.filename === `${second.opId}-maintenance-record.md`),
    );
    expect(record.content).toContain(
      `- Continues an earlier upgrade to ${TARGET}: already on it before this operation, so not upgraded by it: talos-prd-cp-1 (10.0.30.11) upgraded by ${first.opId}`,
    );
    expect(record.content).not.toContain('| upgrade-control-plane | 10.0.30.11 |');
    expect(await harness.command('status')).toContain('no operation holds it');
  });
});
