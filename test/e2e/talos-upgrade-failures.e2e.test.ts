import { afterEach, describe, expect, it } from 'vitest';
import { waitForSettled } from '../support/settled.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import {
  approve,
  approveUntilDone,
  auditLines,
  clickStart,
  originalButtonValue,
  requestUpgrade,
  waitForApprovalRequest,
  waitForRootState,
} from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function failureReply(harness: Harness, rootTs: string): string {
  const failure = harness.slack.thread(CHANNELS.production, rootTs).find((m) => m.text.includes('❌ Stopped'));
  return `${failure?.text ?? ''}${JSON.stringify(failure?.blocks ?? [])}`;
}

describe('the upgrade stops at the first failure of a node', () => {
  it('stops when talosctl upgrade is rejected, before touching another node', async () => {
    h = await startHarness();
    h.sim.faults.set('production', { upgradeError: { '10.0.30.11': 'error validating installer image "x": unauthorized' } });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);
    expect(done.text).toContain('stopped at the first failure');
    expect(failureReply(h, plan.root.ts)).toMatch(/talosctl upgrade of 10\.0\.30\.11 failed/);
    expect(h.sim.upgradeCount('production', '10.0.30.12')).toBe(0);
    expect(h.sim.upgradeCount('production', '10.0.30.13')).toBe(0);
  });

  it('stops when a node is not Ready in time after its reboot', async () => {
    h = await startHarness();
    h.sim.faults.set('production', { upgradeStaysNotReady: ['10.0.30.11'] });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);
    expect(done.text).toContain('stopped at the first failure');
    expect(failureReply(h, plan.root.ts)).toMatch(
      /talosctl upgrade of 10\.0\.30\.11 failed[\s\S]*is not ready[\s\S]*context deadline exceeded/,
    );
    expect(h.sim.upgradeCount('production', '10.0.30.12')).toBe(0);
  });

  it('stops when talosctl upgrade hangs past its timeout, and the call is killed', async () => {
    h = await startHarness({ env: { STEP_TIMEOUT_SECONDS: '2' } });
    h.sim.faults.set('production', { upgradeHang: ['10.0.30.11'] });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);
    expect(done.text).toContain('stopped at the first failure');
    expect(failureReply(h, plan.root.ts)).toMatch(/talosctl upgrade of 10\.0\.30\.11 failed[\s\S]*context deadline exceeded/);
    const call = h.sim.calls.find((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade');
    expect(call?.exitCode).not.toBe(0);
    expect(h.sim.upgradeCount('production', '10.0.30.12')).toBe(0);
  });
});

describe('approval expiry, cancel and the plan buttons', () => {
  it('pauses when an approval expires, and resumes after an approver asks again', async () => {
    h = await startHarness({ env: { APPROVAL_TTL_MINUTES: '0.03' } });
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    const first = await waitForApprovalRequest(harness, plan);
    const expired = await harness.slack.waitFor(
      () => {
        const m = harness.slack.message(CHANNELS.production, first.ts);
        return m !== undefined && /^#\d+ ⏱ Expired/m.test(m.text) ? m : undefined;
      },
      { timeoutMs: 20_000 },
    );
    expect(JSON.stringify(expired.blocks)).toContain('talos-step-rerequest');
    await waitForRootState(harness, plan, /paused/);

    await approve(harness, first, USERS.carol);
    await harness.slack.waitFor(() => harness.slack.ephemerals().find((e) => e.user === USERS.carol && /expired/i.test(e.text)));
    expect(harness.sim.upgradeCount('production', '10.0.30.11')).toBe(0);

    await harness.slack.clickButton({
      user: USERS.carol,
      channel: CHANNELS.production,
      messageTs: first.ts,
      actionId: 'talos-step-rerequest',
    });
    const again = await harness.slack.waitFor(() =>
      harness.slack
        .thread(CHANNELS.production, plan.root.ts)
        .find((m) => m.ts !== first.ts && /"action_id":"talos-step-approve"/.test(JSON.stringify(m.blocks ?? []))),
    );
    await approve(harness, again);
    await harness.slack.waitFor(() => harness.sim.upgradeCount('production', '10.0.30.11') === 1, { timeoutMs: 20_000 });
    await harness.command(`cancel ${plan.opId}`);
  });

  it('cancels a running operation between steps, never in the middle of a node', async () => {
    h = await startHarness();
    const harness = h;
    // The node stays down in its reboot until the cancel was answered: the cancel lands in the middle of the node.
    const up = harness.sim.holdReboots('production', '10.0.30.11');
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    await approve(harness, await waitForApprovalRequest(harness, plan));
    await harness.slack.waitFor(() => harness.sim.events.find((e) => e.kind === 'upgrade-start' && e.node === '10.0.30.11'), {
      timeoutMs: 20_000,
    });
    expect(await harness.command(`cancel ${plan.opId}`)).toContain('will stop after its current step');
    up();
    const root = await waitForRootState(harness, plan, /cancelled/);
    // The root may say so before the cluster is given back: the bot's run has ended once it settled.
    await waitForSettled(harness);
    expect(root.text).toContain('cancelled');
    expect(harness.sim.node('production', '10.0.30.11').talosVersion).toBe(TARGET);
    expect(harness.sim.upgradeCount('production', '10.0.30.12')).toBe(0);
    expect(await harness.command('status')).toContain('no operation holds it');
  });

  it('refuses Start from a non-operator, a tampered value, and a second Start', async () => {
    h = await startHarness();
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan, USERS.carol);
    await harness.slack.waitFor(() => harness.slack.ephemerals().find((e) => e.user === USERS.carol && /Only operators/.test(e.text)));
    const value = originalButtonValue(harness, CHANNELS.production, plan.root.ts, 'talos-op-start')!;
    await harness.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: plan.root.ts,
      actionId: 'talos-op-start',
      value: `${value.split('.')[0]}.000000000000`,
    });
    await harness.slack.waitFor(() => harness.slack.ephemerals().find((e) => e.user === USERS.alice && /no longer valid/.test(e.text)));
    await harness.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: plan.root.ts,
      actionId: 'talos-op-start',
      value: 'op-doesnotexist.abcdef',
    });
    await harness.slack.waitFor(() => harness.slack.ephemerals().find((e) => /does not know/.test(e.text)));
    expect(await harness.command('status')).toContain('no operation holds it');

    await clickStart(harness, plan);
    await waitForApprovalRequest(harness, plan);
    await harness.slack.clickButton({
      user: USERS.bob,
      channel: CHANNELS.production,
      messageTs: plan.root.ts,
      actionId: 'talos-op-start',
      value,
    });
    await harness.slack.waitFor(() => harness.slack.ephemerals().find((e) => e.user === USERS.bob && /no longer valid/.test(e.text)));
    expect(auditLines(harness, plan).filter((l) => /^#\d+ started: review confirmed/.test(l))).toHaveLength(1);
  });
});
