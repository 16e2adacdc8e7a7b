import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { Operation } from '../../src/ops/operation.ts';
import { CHANNELS, startHarness, USERS, type Harness, type HarnessOptions } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { tamperStoredOperation } from '../support/stored-operation.ts';
import {
  approve,
  approveUntilDone,
  clickStart,
  opIdOf,
  originalButtonValue,
  requestUpgrade,
  waitForApprovalRequest,
  waitForRootState,
  type Plan,
} from '../support/upgrade-flow.ts';

// Redis is a store, not the authority: a field edited there after its step reached the node never chooses what runs next.
const TARGET = 'v1.12.11';
const NODE = '10.0.30.11';
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

async function stored(harness: Harness, opId: string): Promise<Operation> {
  const redis = new Redis(harness.redis.url);
  try {
    return JSON.parse((await redis.get(`talos:op:${opId}`))!) as Operation;
  } finally {
    await redis.quit();
  }
}

const upgradeCalls = (harness: Harness) => harness.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade');

/**
 * A production upgrade whose first control-plane request reached talosctl and was refused: the
 * step is stored as issued, and its Retry would send the request again (the resend path).
 */
async function issuedAndStopped(options: HarnessOptions = {}): Promise<{ harness: Harness; plan: Plan; stopTs: string }> {
  h = await startHarness(options);
  const harness = h;
  harness.sim.faults.set('production', { upgradeError: { [NODE]: 'error validating installer image: unauthorized' } });
  const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
  await clickStart(harness, plan);
  await approve(harness, await waitForApprovalRequest(harness, plan));
  await waitForRootState(harness, plan, /stopped at the first failure/);
  const stop = harness.slack.thread(CHANNELS.production, plan.root.ts).findLast((m) => m.text.includes('❌ Stopped'))!;
  expect((await stored(harness, plan.opId)).steps.find((s) => s.node === NODE)?.issuedAt).toBeDefined();
  harness.sim.faults.clear('production', 'upgradeError');
  // Tampered only once the bot has nothing in flight: a write of its own begun before would otherwise write over the tamper.
  await waitForSettled(harness);
  return { harness, plan, stopTs: stop.ts };
}

/** Retry by the requester, then every fresh approval by another approver, until the operation ends again. */
async function retryToTheEnd(harness: Harness, plan: Plan, stopTs: string) {
  await harness.slack.clickButton({
    user: USERS.alice,
    channel: CHANNELS.production,
    messageTs: stopTs,
    actionId: 'talos-op-retry',
    value: originalButtonValue(harness, CHANNELS.production, stopTs, 'talos-op-retry'),
  });
  await harness.slack.waitFor(() => !/stopped at the first failure/.test(harness.slack.message(CHANNELS.production, plan.root.ts)!.text), {
    description: 'the root no longer stopped',
  });
  return approveUntilDone(harness, plan);
}

function lastStop(harness: Harness, plan: Plan): string {
  const stop = harness.slack.thread(CHANNELS.production, plan.root.ts).findLast((m) => m.text.includes('❌ Stopped'));
  return `${stop?.text ?? ''}\n${JSON.stringify(stop?.blocks ?? [])}`;
}

describe('a step issued to its node, then edited in Redis', () => {
  it('never sends the image read back from Redis again: the resumed step derives it, refuses, and sends nothing', async () => {
    const { harness, plan, stopTs } = await issuedAndStopped();
    const evil = `registry.example/evil-installer:${TARGET}`;
    await tamperStoredOperation(harness, plan.opId, (op) => {
      for (const step of op.steps) if (step.node === NODE) step.image = evil;
    });
    const before = upgradeCalls(harness).length;

    const done = await retryToTheEnd(harness, plan, stopTs);

    expect(done.text).toContain('stopped at the first failure');
    expect(upgradeCalls(harness).slice(before)).toEqual([]);
    expect(upgradeCalls(harness).some((c) => c.argv.includes(evil))).toBe(false);
    const after = await stored(harness, plan.opId);
    expect(after.reason).toBe(
      'what the bot stored for this step no longer matches the nodes the sources show and the rules; nothing was run',
    );
    expect(lastStop(harness, plan)).toContain(`stored installer image ${evil}`);
    expect(harness.sim.node('production', NODE).talosVersion).not.toBe(TARGET);
  }, 180_000);

  it('never follows a target version edited into a downgrade, even with images retagged to match it', async () => {
    const { harness, plan, stopTs } = await issuedAndStopped();
    const from = (await stored(harness, plan.opId)).target.fromVersion!;
    const downgrade = 'v1.10.9';
    // Every stored image agrees with the edited target, so only the version rules can tell.
    await tamperStoredOperation(harness, plan.opId, (op) => {
      op.target.version = downgrade;
      for (const step of op.steps) if (step.image !== undefined) step.image = step.image.replace(`:${TARGET}`, `:${downgrade}`);
    });
    const before = upgradeCalls(harness).length;

    const done = await retryToTheEnd(harness, plan, stopTs);

    expect(done.text).toContain('stopped at the first failure');
    expect(upgradeCalls(harness).slice(before)).toEqual([]);
    expect((await stored(harness, plan.opId)).reason).toBe(
      'what the bot stored for this step no longer matches the nodes the sources show and the rules; nothing was run',
    );
    expect(lastStop(harness, plan)).toContain(`the stored path ${from} → ${downgrade} is not one the rules allow`);
  }, 180_000);
});

describe('a node removal whose stored Node name is edited in Redis while the node is reset', () => {
  it('deletes no Node: the Node is resolved by its address at delete time, and a name that differs stops the removal', async () => {
    h = await startHarness();
    const harness = h;
    // The reset is held at the node until the stored operation is edited: the edit lands between the request and the deletion.
    const reset = harness.sim.holdCalls('production', (_call, command) => command === 'reset');
    for (const volume of harness.sim.cluster('production').kube.volumes) volume.replicas = ['talos-prd-cp-1', 'talos-prd-cp-2'];
    const ack = await harness.command('remove 10.0.30.13', { channel: CHANNELS.production });
    const opId = opIdOf(ack);
    const root = await harness.slack.waitFor(
      () => harness.slack.channelMessages(CHANNELS.production).find((m) => m.text.includes(opId) && /Removal of/.test(m.text)),
      { timeoutMs: 60_000, description: `the plan of ${opId}` },
    );
    const plan: Plan = { opId, root, ack };
    await approve(harness, await waitForApprovalRequest(harness, plan, CHANNELS.production, 60_000), USERS.carol);
    // The reset is issued (stored, then sent to the node): from then on only the deletion reads the name.
    await reset.reached;
    expect((await stored(harness, opId)).steps.find((s) => s.kind === 'reset-node')?.issuedAt).toBeDefined();
    await tamperStoredOperation(harness, opId, (op) => {
      op.target.nodeName = 'talos-prd-cp-1';
      for (const step of op.steps) step.nodeName = step.nodeName === undefined ? undefined : 'talos-prd-cp-1';
    });
    reset.release();

    const done = await waitForRootState(harness, plan, /completed|stopped/, CHANNELS.production, 90_000);

    expect(done.text).toContain('stopped');
    expect(harness.sim.events.filter((e) => e.kind === 'node-deleted')).toEqual([]);
    expect(harness.sim.node('production', '10.0.30.11').k8sRegistered).toBe(true);
    expect(harness.sim.node('production', '10.0.30.13').k8sRegistered).toBe(true);
    const after = await stored(harness, opId);
    expect(after.steps.map((s) => [s.kind, s.status])).toEqual([
      ['reset-node', 'done'],
      ['delete-node', 'failed'],
      ['removal-verify', 'pending'],
    ]);
    expect(after.reason).toMatch(/^the Node that carries 10\.0\.30\.13 is talos-prd-cp-3, not talos-prd-cp-1 as the bot stored/);
    expect(after.reason).toContain('no Node was deleted');
  }, 180_000);
});
