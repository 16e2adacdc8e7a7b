import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import type { Plan } from '../support/upgrade-flow.ts';
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
import { storedOperation } from '../support/stored-operation.ts';

// A stopped upgrade is resumed by Retry through the real buttons, and every node boots into the target exactly once.
const TARGET = 'v1.12.11';
const NODES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** How often each node came up running the target: an upgrade that took effect. */
function bootsIntoTarget(harness: Harness): number[] {
  return NODES.map((node) => harness.sim.events.filter((e) => e.kind === 'up' && e.node === node && e.toVersion === TARGET).length);
}

async function stopOf(harness: Harness, plan: Plan) {
  await waitForRootState(harness, plan, /stopped at the first failure/);
  return harness.slack.thread(CHANNELS.production, plan.root.ts).findLast((m) => m.text.includes('❌ Stopped'))!;
}

function blocksOf(harness: Harness, ts: string): string {
  return JSON.stringify(harness.slack.message(CHANNELS.production, ts)?.blocks ?? []);
}

async function clickRetry(harness: Harness, stopTs: string, user: string): Promise<void> {
  await harness.slack.clickButton({
    user,
    channel: CHANNELS.production,
    messageTs: stopTs,
    actionId: 'talos-op-retry',
    value: originalButtonValue(harness, CHANNELS.production, stopTs, 'talos-op-retry'),
  });
}

/** Retry by `user`, then the fresh approvals by carol, until the end; four eyes keep the requester from approving. */
async function retryToTheEnd(harness: Harness, plan: Plan, stopTs: string, user: string = USERS.alice) {
  await clickRetry(harness, stopTs, user);
  await harness.slack.waitFor(() => !/stopped at the first failure/.test(harness.slack.message(CHANNELS.production, plan.root.ts)!.text), {
    description: 'the root no longer stopped',
  });
  return approveUntilDone(harness, plan);
}

describe('a stopped Talos upgrade resumed by Retry', () => {
  it('never issued (quorum before the node): the Retry asks an approver again, then upgrades it', async () => {
    h = await startHarness();
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    const request = await waitForApprovalRequest(harness, plan);
    harness.sim.faults.set('production', { etcdUnhealthy: { '10.0.30.12': 'Failed' } });
    await approve(harness, request);
    const stop = await stopOf(harness, plan);
    const stopped = await storedOperation(harness, plan.opId);
    expect(stopped.steps.find((s) => s.node === '10.0.30.11')).toMatchObject({ status: 'failed' });
    expect(stopped.steps.find((s) => s.node === '10.0.30.11')?.issuedAt).toBeUndefined();
    expect(stopped.retry).toMatchObject({ step: 'node-10.0.30.11', state: 'offered' });
    expect(harness.sim.upgradeCount('production', '10.0.30.11')).toBe(0);

    harness.sim.faults.clear('production', 'etcdUnhealthy');
    await clickRetry(harness, stop.ts, USERS.alice);
    const again = await harness.slack.waitFor(
      () =>
        harness.slack
          .thread(CHANNELS.production, plan.root.ts)
          .find((m) => m.ts !== request.ts && blocksOf(harness, m.ts).includes('talos-step-approve')),
      { description: 'the approval asked again' },
    );
    // The operator who retried may not approve the control plane: an approver decides again.
    await approve(harness, again, USERS.alice);
    await harness.slack.waitFor(() =>
      harness.slack.ephemerals().find((e) => e.user === USERS.alice && e.text.startsWith("Only production's approvers can approve: ")),
    );
    expect(harness.sim.upgradeCount('production', '10.0.30.11')).toBe(0);
    const done = await approveUntilDone(harness, plan);

    expect(done.text).toMatch(/completed/);
    expect(bootsIntoTarget(harness)).toEqual([1, 1, 1]);
    const lines = auditLines(harness, plan).join('\n');
    expect(lines).toMatch(/retry requested from node-10\.0\.30\.11/);
    expect(lines).toMatch(/observed 10\.0\.30\.11 before going on: 10\.0\.30\.11 runs v1\.11\.6.*its upgrade was never requested/);
  }, 180_000);

  it('already on the target (not Ready in time): the Retry only checks the node again, then goes on', async () => {
    h = await startHarness({ env: { NODE_READY_TIMEOUT_SECONDS: '6' } });
    const harness = h;
    harness.sim.faults.set('production', { upgradeStaysNotReady: ['10.0.30.11'] });
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    await approve(harness, await waitForApprovalRequest(harness, plan));
    const stop = await stopOf(harness, plan);
    const stopped = await storedOperation(harness, plan.opId);
    expect(stopped.retry).toMatchObject({ step: 'node-10.0.30.11', resume: 'observe' });
    expect(stopped.retry?.does).toMatch(/looks at 10\.0\.30\.11 first/);
    expect(harness.sim.node('production', '10.0.30.11').talosVersion).toBe(TARGET);

    // The kubelet recovers: the node is on the target, so nothing is sent to it again.
    harness.sim.faults.clear('production', 'upgradeStaysNotReady');
    harness.sim.node('production', '10.0.30.11').kubeletNotReady = false;
    const done = await retryToTheEnd(harness, plan, stop.ts);

    expect(done.text).toMatch(/completed/);
    expect(NODES.map((n) => harness.sim.upgradeCount('production', n))).toEqual([1, 1, 1]);
    expect(bootsIntoTarget(harness)).toEqual([1, 1, 1]);
    const after = await storedOperation(harness, plan.opId);
    expect(after.steps.find((s) => s.node === '10.0.30.11')?.detail).toMatch(/only the checks after it ran again/);
    expect(auditLines(harness, plan).join('\n')).toMatch(
      /observed 10\.0\.30\.11 before going on: .*rebooted since the request.*only the checks/,
    );
  }, 180_000);

  it('a request that never reached the node (talosctl refused it): the Retry sends it again, once', async () => {
    h = await startHarness();
    const harness = h;
    harness.sim.faults.set('production', { upgradeError: { '10.0.30.11': 'error validating installer image: unauthorized' } });
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    await approve(harness, await waitForApprovalRequest(harness, plan));
    const stop = await stopOf(harness, plan);
    expect((await storedOperation(harness, plan.opId)).steps.find((s) => s.node === '10.0.30.11')?.issuedAt).toBeDefined();

    harness.sim.faults.clear('production', 'upgradeError');
    const done = await retryToTheEnd(harness, plan, stop.ts);

    expect(done.text).toMatch(/completed/);
    expect(bootsIntoTarget(harness)).toEqual([1, 1, 1]);
    expect(auditLines(harness, plan).join('\n')).toMatch(
      /observed 10\.0\.30\.11 before going on: .*not cordoned: nothing of the request shows on it/,
    );
  }, 180_000);

  it('Talos fell back to the previous image on its own: no Rollback, and only an approver retries the node, explicitly', async () => {
    h = await startHarness();
    const harness = h;
    harness.sim.faults.set('production', { upgradeSilentRevert: ['10.0.30.11'] });
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    await approve(harness, await waitForApprovalRequest(harness, plan));
    const stop = await stopOf(harness, plan);
    const blocks = blocksOf(harness, stop.ts);
    expect(blocks).toContain('Retry the upgrade of this node');
    expect(blocks).not.toContain('talos-node-rollback');
    expect(await storedOperation(harness, plan.opId)).toMatchObject({
      retry: { resume: 'reissue', explicit: 'Retry the upgrade of this node' },
    });

    // An operator may not give it; an approver may.
    await clickRetry(harness, stop.ts, USERS.alice);
    await harness.slack.waitFor(() => harness.slack.ephemerals().find((e) => e.user === USERS.alice && /Only approvers/.test(e.text)));
    expect((await storedOperation(harness, plan.opId)).state).toBe('failed');
    harness.sim.faults.clear('production', 'upgradeSilentRevert');
    const done = await retryToTheEnd(harness, plan, stop.ts, USERS.carol);

    expect(done.text).toMatch(/completed/);
    expect(bootsIntoTarget(harness)).toEqual([1, 1, 1]);
    expect(auditLines(harness, plan).join('\n')).toMatch(/Retry the upgrade of this node requested from node-10\.0\.30\.11/);
  }, 180_000);
});
