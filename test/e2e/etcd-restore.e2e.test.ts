import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../slack-emulator/index.ts';
import { productionShape, STAGING_THREE_CPS, stagingThreeShape } from '../sim/shapes.ts';
import { CHANNELS, startHarness, USERS, type Harness, type HarnessOptions } from '../support/harness.ts';
import { approve, auditLines, clickStart, opIdOf, waitForApprovalRequest, waitForRootState, type Plan } from '../support/upgrade-flow.ts';

const STAGING_CPS = STAGING_THREE_CPS;

const staging3 = stagingThreeShape();

/** U0ALICE is an operator and an approver of staging: as the requester, her approval never counts. */
const OPTIONS: HarnessOptions = {
  clusters: [staging3, productionShape()],
  etcd: 'real',
  // A reboot as long as a few talosctl calls: a real one takes minutes, so the resets, back to back, all land before the
  // first node is up again (one that came up while the others still ran etcd would join them, as upstream does).
  timing: { rebootMs: 3000 },
  // The cluster's way back (reboots, learners promoted, Flux reconciling) on a shared, loaded machine.
  env: { NODE_READY_TIMEOUT_SECONDS: '40' },
  inventory: { approvers: { staging: [USERS.alice, USERS.carol, USERS.dave], production: [USERS.carol, USERS.dave] } },
};

let h: Harness;

afterEach(async () => {
  await h?.stop();
});

const resets = () => h.sim.events.filter((e) => e.cluster === 'staging' && e.kind === 'reset');
const resetCalls = () => h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv[0] === 'reset');
const bootstrapCalls = () => h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv[0] === 'bootstrap');

/** `/talos rehearse etcd-restore` in staging's channel, and its plan. */
async function requestRehearsal(): Promise<Plan> {
  const ack = await h.command('rehearse etcd-restore', { channel: CHANNELS.staging, user: USERS.alice });
  const opId = opIdOf(ack);
  const root = await h.slack.waitFor(
    () => h.slack.channelMessages(CHANNELS.staging).find((m) => m.text.includes(opId) && /planned|refused/.test(m.text)),
    { timeoutMs: 60_000, description: `the plan of ${opId}` },
  );
  return { opId, root, ack };
}

async function ephemeral(user: string, starts: string): Promise<string> {
  const found = await h.slack.waitFor(() => h.slack.ephemerals(CHANNELS.staging, user).find((e) => e.text.startsWith(starts)), {
    description: `the answer to ${user}: ${starts}`,
  });
  return found.text;
}

/** The thread's last replies with their evidence, to say why a rehearsal did not complete. */
function lastReplies(plan: Plan): string {
  return JSON.stringify(
    h.slack
      .thread(CHANNELS.staging, plan.root.ts)
      .slice(-3)
      .map((m) => m.blocks),
  );
}

/** Both approvals, by two approvers other than the requester. */
async function approveTwice(plan: Plan): Promise<Message> {
  const request = await waitForApprovalRequest(h, plan, CHANNELS.staging, 60_000);
  await approve(h, request, USERS.carol, CHANNELS.staging);
  await h.slack.waitFor(() => /1 of 2: <@U0CAROL> approved/.test(JSON.stringify(h.slack.message(CHANNELS.staging, request.ts)?.blocks)));
  await approve(h, request, USERS.dave, CHANNELS.staging);
  return request;
}

describe('/talos rehearse etcd-restore on staging', () => {
  it('restores staging from a fresh verified snapshot after two distinct approvers, with exactly one bootstrap, and ticks the gate', async () => {
    h = await startHarness(OPTIONS);
    const plan = await requestRehearsal();
    expect(plan.root.text).toContain('planned');
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    const request = await waitForApprovalRequest(h, plan, CHANNELS.staging, 60_000);
    // The snapshot is taken and verified before anyone is asked; nothing is reset yet.
    expect(h.sim.events.filter((e) => e.cluster === 'staging' && e.kind === 'snapshot')).toHaveLength(1);
    expect(resets()).toEqual([]);
    expect(JSON.stringify(request.blocks)).toContain('two different approvers of staging must approve');

    // The requester, although an approver, is refused; the first approver is recorded, and refused a second time.
    await approve(h, request, USERS.alice, CHANNELS.staging);
    expect(await ephemeral(USERS.alice, 'This step needs two approvers')).toContain('Nothing changed.');
    await approve(h, request, USERS.carol, CHANNELS.staging);
    await h.slack.waitFor(() =>
      JSON.stringify(h.slack.message(CHANNELS.staging, request.ts)?.blocks).includes(
        '1 of 2: <@U0CAROL> approved; waiting for a second approver',
      ),
    );
    await approve(h, request, USERS.carol, CHANNELS.staging);
    expect(await ephemeral(USERS.carol, 'You already approved this step (1 of 2)')).toContain('Nothing changed.');
    expect(resets()).toEqual([]);
    await approve(h, request, USERS.dave, CHANNELS.staging);

    const done = await waitForRootState(h, plan, /completed|stopped|failed/, CHANNELS.staging, 180_000);
    expect(done.text.includes('completed') ? 'completed' : `${done.text}: ${lastReplies(plan)}`).toBe('completed');
    // Every control plane reset once, EPHEMERAL wiped; exactly one bootstrap --recover-from, on the first control plane.
    expect(resets().map((e) => [e.node, e.detail])).toEqual(STAGING_CPS.map((cp) => [cp, 'EPHEMERAL']));
    expect(resetCalls().map((c) => c.argv.slice(0, 5))).toEqual(
      STAGING_CPS.map(() => ['reset', '--graceful=false', '--reboot', '--system-labels-to-wipe=EPHEMERAL', '--wait=false']),
    );
    expect(h.sim.bootstrapCount('staging')).toBe(1);
    expect(bootstrapCalls()).toHaveLength(1);
    const bootstrap = bootstrapCalls()[0]!.argv;
    expect(bootstrap.slice(0, 2)).toEqual(['bootstrap', expect.stringMatching(/^--recover-from=.*staging-.*-rev\d+\.db$/)]);
    expect(bootstrap[bootstrap.indexOf('--nodes') + 1]).toBe(STAGING_CPS[0]);
    expect(bootstrap[bootstrap.indexOf('--endpoints') + 1]).toBe(STAGING_CPS[0]);
    expect(h.sim.events.some((e) => e.cluster === 'staging' && e.kind === 'etcd-restored')).toBe(true);

    // The record: the snapshot used, its revision, the keys before and after, the downtime, the members.
    const record = await h.slack.waitFor(() => h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`), {
      timeoutMs: 30_000,
    });
    expect(record.content).toMatch(/Snapshot restored: staging-\S+-rev(\d+) \(\S+\.db, \d+ bytes, sha256 [0-9a-f]{64}\)/);
    expect(record.content).toMatch(/Snapshot revision: \d+; total keys in the snapshot \(before\): \d+/);
    expect(record.content).toMatch(/Total keys after the restore: \d+ \(verification snapshot staging-\S+, revision \d+\)/);
    expect(record.content).toMatch(/Downtime: \d+ s \(first reset issued → Kubernetes API answering again\)/);
    expect(record.content).toContain(`etcd members before: ${STAGING_CPS.join(', ')}; after: ${STAGING_CPS.join(', ')}`);
    // etcd counts every bolt key, its membership buckets included: the members that rejoined with new ids add keys,
    // so the count after is etcd's own number, not the snapshot's (reference/real-etcd.md).
    const keys = Number(/total keys in the snapshot \(before\): (\d+)/.exec(record.content)![1]);
    expect(Number(/Total keys after the restore: (\d+)/.exec(record.content)![1])).toBeGreaterThanOrEqual(keys);

    // `/talos gates` on production now ticks the etcd restore from this rehearsal, with its date.
    const before = h.slack.channelMessages(CHANNELS.production).length;
    await h.command('gates', { channel: CHANNELS.production, user: USERS.alice });
    const rehearsals = await h.slack.waitFor(
      () => {
        const root = h.slack.channelMessages(CHANNELS.production).slice(before)[0];
        return root === undefined
          ? undefined
          : h.slack.thread(CHANNELS.production, root.ts).find((m) => m.text.includes('Staging rehearsals'));
      },
      { timeoutMs: 60_000, description: 'the staging rehearsals gate' },
    );
    expect(JSON.stringify(rehearsals.blocks) + rehearsals.text).toMatch(
      new RegExp(`☑ etcd restore: ${plan.opId} completed \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC`),
    );
  }, 240_000);

  it('is refused on production, whatever else the command says: nothing queued, nothing reset', async () => {
    h = await startHarness(OPTIONS);
    const reply = await h.command('rehearse etcd-restore', { channel: CHANNELS.production, user: USERS.alice });
    expect(reply).toContain('*production* is production: an etcd restore rehearsal destroys etcd on purpose');
    expect(reply).toContain('staging clusters: *staging*');
    expect(reply).toContain('Nothing was started.');
    // Named from staging's channel, it is refused too: a mutating command for a cluster is taken only in its channel.
    expect(await h.command('rehearse etcd-restore production', { channel: CHANNELS.production, user: USERS.bob })).toContain(
      'Nothing was started.',
    );
    expect(h.sim.calls.filter((c) => c.bin === 'talosctl')).toEqual([]);
    expect(h.slack.channelMessages(CHANNELS.production)).toEqual([]);
    expect(await h.command('status', { channel: CHANNELS.production })).toContain('no operation holds it');
  });

  it('stops before any reset when the snapshot is corrupt: the bot refuses it as etcd would', async () => {
    h = await startHarness(OPTIONS);
    const plan = await requestRehearsal();
    // The next `talosctl etcd snapshot` flips a byte of the data: talosctl's own read-back passes, etcd's trailing hash does not.
    h.sim.faults.set('staging', { snapshotDamage: 'flip-body-byte' });
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    const stopped = await waitForRootState(h, plan, /completed|stopped|failed/, CHANNELS.staging, 60_000);
    expect(stopped.text).not.toContain('completed');
    await h.slack.waitFor(() => auditLines(h, plan, CHANNELS.staging).find((l) => /stopped/.test(l)));
    const stop = auditLines(h, plan, CHANNELS.staging).find((l) => /stopped/.test(l))!;
    expect(stop).toContain('would not restore, so the rehearsal stopped before any reset');
    const thread = JSON.stringify(h.slack.thread(CHANNELS.staging, plan.root.ts));
    expect(thread).toContain("etcd's own integrity check would refuse it");
    expect(thread).toContain('run /talos rehearse etcd-restore again');
    // Nobody was asked; nothing was reset or bootstrapped; no Retry of the snapshot is offered.
    expect(resets()).toEqual([]);
    expect(resetCalls()).toEqual([]);
    expect(h.sim.bootstrapCount('staging')).toBe(0);
    expect(JSON.stringify(h.slack.message(CHANNELS.staging, plan.root.ts)?.blocks)).not.toContain('talos-op-retry');
  });

  it('does not issue the bootstrap again after a crash right after it was issued', async () => {
    h = await startHarness(OPTIONS);
    const plan = await requestRehearsal();
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    await approveTwice(plan);
    // The bot dies the moment its bootstrap reached the node, and comes back.
    await h.slack.waitFor(() => h.sim.bootstrapCount('staging') > 0, { timeoutMs: 120_000, description: 'the bootstrap' });
    await h.bot.kill();
    await h.bot.start();

    const done = await waitForRootState(h, plan, /completed|stopped|failed/, CHANNELS.staging, 180_000);
    expect(done.text.includes('completed') ? 'completed' : `${done.text}: ${lastReplies(plan)}`).toBe('completed');
    expect(h.sim.bootstrapCount('staging')).toBe(1);
    expect(bootstrapCalls()).toHaveLength(1);
    // Either the run that issued it recorded its end before the crash, or the one after it observed: never both, never twice.
    const lines = auditLines(h, plan, CHANNELS.staging);
    const issued = lines.filter((l) => /bootstrap --recover-from staging-/.test(l) && !/not repeated/.test(l));
    const observed = lines.filter((l) => l.includes('bootstrap already issued: not repeated'));
    expect(issued.length + observed.length).toBe(1);
  }, 240_000);
});
