import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { productionShape, stagingShape } from '../sim/index.ts';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness, type HarnessOptions } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import {
  approve,
  approveUntilDone,
  auditLines,
  clickStart,
  opIdOf,
  opLink,
  requestUpgrade,
  waitForApprovalRequest,
  waitForRootState,
  type Plan,
} from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
let h: Harness;

async function harness(options: HarnessOptions = {}): Promise<Harness> {
  h = await startHarness(options);
  return h;
}

afterEach(async () => {
  await h?.stop();
});

const rollbackCalls = (node: string) =>
  h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv[0] === 'rollback' && c.argv.includes(node));

/** Runs a production upgrade until it stops, and returns the stop message with its Rollback button. */
async function stoppedUpgrade(): Promise<{ plan: Plan; failure: Message }> {
  const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
  await clickStart(h, plan);
  const done = await approveUntilDone(h, plan);
  expect(done.text).toContain('stopped at the first failure');
  const failure = h.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped'));
  expect(JSON.stringify(failure?.blocks)).toContain('talos-node-rollback');
  return { plan, failure: failure! };
}

/** Clicks a stopped upgrade's Rollback button and returns the rollback operation it requested, once its root is in the channel. */
async function requestRollbackByButton(failure: Message, user: string = USERS.bob): Promise<Plan> {
  await h.slack.clickButton({ user, channel: CHANNELS.production, messageTs: failure.ts, actionId: 'talos-node-rollback' });
  const ack = await h.slack.waitFor(
    () => h.slack.ephemerals(CHANNELS.production, user).find((e) => /Requested the rollback/.test(e.text)),
    { description: 'the rollback request' },
  );
  const opId = opIdOf(ack.text);
  const root = await h.slack.waitFor(
    () =>
      h.slack
        .channelMessages(CHANNELS.production)
        .find((m) => m.text.includes(opId) && /Rollback of/.test(m.text) && !/preflight/.test(m.text)),
    {
      timeoutMs: 30_000,
      description: `the root of ${opId}`,
    },
  );
  return { opId, root, ack: ack.text };
}

describe('the Rollback button of a stopped upgrade', () => {
  it('is not offered when Talos fell back to the previous image by itself: only an approver may retry the node', async () => {
    await harness();
    h.sim.faults.set('production', { upgradeSilentRevert: ['10.0.30.12'] });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    expect((await approveUntilDone(h, plan)).text).toContain('stopped at the first failure');
    const failure = h.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped'));

    const blocks = JSON.stringify(failure?.blocks);
    expect(blocks).not.toContain('talos-node-rollback');
    expect(blocks).toContain('Retry the upgrade of this node');
    expect(rollbackCalls('10.0.30.12')).toEqual([]);
    // The stopped upgrade still holds the cluster.
    expect(await h.command('status')).toContain(`locked by ${opLink(plan)}`);
  });

  it("asks an approver (never the requester), takes over the upgrade's lock, and cannot be cancelled while the node reboots", async () => {
    await harness({ inventory: { approvers: [USERS.carol, USERS.bob, 'S0SRE'] } });
    h.sim.faults.set('production', { upgradeStaysNotReady: ['10.0.30.11'], rollbackNoReturn: ['10.0.30.11'] });
    const { plan, failure } = await stoppedUpgrade();

    const rollback = await requestRollbackByButton(failure, USERS.bob);
    const request = await waitForApprovalRequest(h, rollback);
    expect(await h.command('status')).toContain(`locked by ${opLink(rollback)}`);
    await approve(h, request, USERS.alice); // an operator, not an approver
    await approve(h, request, USERS.bob); // an approver, but the one who asked for it
    const refusals = await h.slack.waitFor(() => {
      const list = h.slack
        .ephemerals(CHANNELS.production)
        .filter((e) => /^Only production's approvers can approve: |four eyes/.test(e.text));
      return list.length >= 2 ? list : undefined;
    });
    expect(refusals.map((e) => [e.user, /four eyes/.test(e.text)])).toEqual(
      expect.arrayContaining([
        [USERS.alice, false],
        [USERS.bob, true],
      ]),
    );
    expect(rollbackCalls('10.0.30.11')).toEqual([]);

    await approve(h, request, USERS.carol);
    await h.slack.waitFor(() => rollbackCalls('10.0.30.11')[0], { timeoutMs: 30_000, description: 'the talosctl rollback' });
    expect(await h.command(`cancel ${rollback.opId}`)).toContain('cannot be cancelled now');
    expect(await h.command(`cancel ${plan.opId}`)).toContain(`Cancelled ${opLink(plan)}`);
    // Cancelling the stopped upgrade frees nothing: the rollback holds the cluster while its node is down.
    expect(await h.command('status')).toContain(`locked by ${opLink(rollback)}`);

    await waitForRootState(h, rollback, /stopped at the first failure/, CHANNELS.production, 60_000);
    expect(rollbackCalls('10.0.30.11')).toHaveLength(1);
    expect(await h.command(`cancel ${rollback.opId}`)).toContain('is free for the next operation');
  });
});

describe('four eyes in production by default', () => {
  it('lets nobody override or approve an operation they asked for', async () => {
    await harness({ inventory: { approvers: [USERS.carol, USERS.alice, 'S0SRE'] } });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    await h.slack.clickButton({ user: USERS.alice, channel: CHANNELS.production, messageTs: plan.root.ts, actionId: 'talos-op-override' });
    await h.slack.waitFor(() => h.slack.ephemerals(CHANNELS.production, USERS.alice).find((e) => /four eyes/.test(e.text)), {
      description: 'the four-eyes refusal of the override',
    });
    expect(JSON.stringify(h.slack.message(CHANNELS.production, plan.root.ts)?.blocks)).not.toContain('overridden by');

    await clickStart(h, plan, USERS.alice, CHANNELS.production, { overrideBy: USERS.carol });
    const request = await waitForApprovalRequest(h, plan);
    await approve(h, request, USERS.alice);
    await h.slack.waitFor(() => h.slack.ephemerals(CHANNELS.production, USERS.alice).filter((e) => /four eyes/.test(e.text))[1], {
      description: 'the four-eyes refusal of the approval',
    });
    expect(h.sim.upgradeCount('production', '10.0.30.11')).toBe(0);
    expect(await h.command(`cancel ${plan.opId}`)).toContain(`Cancelled ${opLink(plan)}`);
  });
});

describe('Slack failing under a finished step', () => {
  it('completes a Kubernetes upgrade whose root edits and maintenance record Slack refused: a view that failed is never a failed step', async () => {
    await harness({ clusters: [stagingShape({ talosVersion: 'v1.12.11' }), productionShape({ talosVersion: 'v1.12.11' })] });
    const plan = await requestUpgrade(h, 'upgrade k8s 1.35.0', { channel: CHANNELS.staging });
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    const request = await h.slack.waitFor(
      () => h.slack.thread(CHANNELS.staging, plan.root.ts).find((m) => JSON.stringify(m.blocks ?? []).includes('talos-k8s-apply')),
      {
        timeoutMs: 30_000,
        description: 'the Apply request',
      },
    );
    h.slack.faults.serverError({ count: 10_000, status: 500, methods: ['chat.update', 'files.getUploadURLExternal'] });

    await h.slack.clickButton({ user: USERS.dave, channel: CHANNELS.staging, messageTs: request.ts, actionId: 'talos-k8s-apply' });
    await h.slack.waitFor(() => h.slack.thread(CHANNELS.staging, plan.root.ts).find((m) => /Terraform follow-up/.test(m.text)), {
      timeoutMs: 60_000,
      description: 'the follow-up',
    });
    h.slack.faults.clear();

    const lines = auditLines(h, plan, CHANNELS.staging);
    expect(lines.join('\n')).toMatch(/^#\d+ verified: all 2 nodes report kubelet v1\.35\.0/m);
    expect(lines.join('\n')).not.toMatch(/stopped/);
    expect(h.slack.uploadedFiles().some((f) => f.filename.endsWith('-maintenance-record.md'))).toBe(false);
    expect(await h.command('status', { channel: CHANNELS.staging })).toMatch(
      new RegExp(`\\|${plan.opId}> Kubernetes upgrade to [^\n]*: completed`),
    );
  });
});

describe('Redis is a store, not the authority', () => {
  it('stops before talosctl when the installer image read back from Redis is not the one the rules derive', async () => {
    await harness();
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const request = await waitForApprovalRequest(h, plan);
    // Tampered only once the bot has nothing in flight: a write of its own begun before would otherwise write over the tamper.
    await waitForSettled(h);
    const redis = new Redis(h.redis.url);
    const key = `talos:op:${plan.opId}`;
    const stored = JSON.parse((await redis.get(key))!) as { steps: { id: string; image?: string }[] };
    for (const step of stored.steps) if (step.id === 'node-10.0.30.11') step.image = 'registry.example/evil-installer:v1.12.11';
    await redis.set(key, JSON.stringify(stored));
    await redis.quit();

    await approve(h, request, USERS.carol);

    const failed = await waitForRootState(h, plan, /stopped at the first failure|completed/);
    expect(failed.text).toContain('stopped at the first failure');
    const stop = h.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped'));
    expect(stop?.text).toContain('no longer matches the nodes the sources show and the rules');
    expect(JSON.stringify(stop?.blocks)).toContain('registry.example/evil-installer');
    expect(h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade')).toEqual([]);
  });
});

describe('a cancel during the preflight', () => {
  it('stays cancelled: the preflight that finishes later takes no lock, asks nobody and queues no run', async () => {
    await harness();
    // The quorum check of the removal's preflight hangs until its probe timeout, so the cancel lands while it runs.
    h.sim.faults.set('production', { hang: ['etcd'] });
    const ack = await h.command('remove 10.0.30.13');
    const opId = opIdOf(ack);
    await h.slack.waitFor(() => h.sim.calls.find((c) => c.bin === 'talosctl' && c.argv[0] === 'etcd'), {
      timeoutMs: 30_000,
      description: 'the preflight reaching etcd',
    });

    expect(await h.command(`cancel ${opId}`)).toContain(`Cancelled \`${opId}\``);
    await h.slack.waitFor(
      () => h.bot.logLines().find((l) => l['op'] === opId && l['msg'] === 'preflight ended on an operation that was cancelled meanwhile'),
      {
        timeoutMs: 60_000,
        description: 'the preflight to end',
      },
    );
    h.sim.faults.set('production', {});

    expect(await h.command('status')).toMatch(/\*production\* — idle, no operation holds it/);
    expect(
      h.slack.channelMessages(CHANNELS.production).filter((m) => m.text.includes(opId) && /waiting for approval|running/.test(m.text)),
    ).toEqual([]);
    const everywhere = h.slack.channelMessages(CHANNELS.production).flatMap((m) => [m, ...h.slack.thread(CHANNELS.production, m.ts)]);
    expect(everywhere.filter((m) => JSON.stringify(m.blocks ?? []).includes('talos-step-approve'))).toEqual([]);
    expect(h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv[0] === 'reset')).toEqual([]);
  });
});
