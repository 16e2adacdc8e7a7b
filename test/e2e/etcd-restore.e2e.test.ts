import { readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
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
  await h.slack.waitFor(() =>
    /approval 1 of 2: <@U0CAROL> approved/.test(JSON.stringify(h.slack.message(CHANNELS.staging, request.ts)?.blocks)),
  );
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
        'approval 1 of 2: <@U0CAROL> approved; waiting for a second approver',
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

describe('/talos rehearse etcd-restore on a staging as real clusters run it', () => {
  it('completes with in-sync Helm releases: Flux is asked to reconcile and reports the request handled, Ready kept', async () => {
    h = await startHarness(OPTIONS);
    const cluster = h.sim.cluster('staging');
    const releases = cluster.kube.flux.filter((o) => o.kind === 'HelmRelease');
    const plan = await requestRehearsal();
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    await approveTwice(plan);

    const done = await waitForRootState(h, plan, /completed|stopped|failed/, CHANNELS.staging, 180_000);
    expect(done.text.includes('completed') ? 'completed' : `${done.text}: ${lastReplies(plan)}`).toBe('completed');
    // Every Flux object, HelmReleases included, was asked once with the same token, and reports it handled.
    const requests = h.sim.events
      .filter((e) => e.cluster === 'staging' && e.kind === 'flux-reconcile-requested')
      .map((e) => e.detail ?? '');
    const token = requests[0]?.split(' ').at(-1);
    expect(requests.sort()).toEqual(cluster.kube.flux.map((o) => `${o.kind} ${o.namespace}/${o.name} ${token}`).sort());
    expect(releases.length).toBeGreaterThan(0);
    expect(releases.map((o) => o.reconcileRequest?.token)).toEqual(releases.map(() => token));
    const watch = auditLines(h, plan, CHANNELS.staging).find((l) => l.includes('cluster back'));
    expect(watch).toContain(`Flux reconciled on request ${token} and Ready`);
  }, 240_000);

  it("brings back a control plane whose etcd failed after etcd's join limit, and completes", async () => {
    h = await startHarness(OPTIONS);
    const plan = await requestRehearsal();
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    await waitForApprovalRequest(h, plan, CHANNELS.staging, 60_000);
    // etcd's join limit runs out at once: each wiped control plane's etcd is Failed as soon as it boots.
    const limit = h.sim.timing.etcdJoinTimeoutMs;
    h.sim.timing.etcdJoinTimeoutMs = 0;
    await approveTwice(plan);
    const timedOut = () => new Set(h.sim.events.filter((e) => e.kind === 'etcd-join-timeout').map((e) => e.node));
    await h.slack.waitFor(() => timedOut().size === STAGING_CPS.length, { timeoutMs: 60_000, description: 'every join limit ran out' });
    h.sim.timing.etcdJoinTimeoutMs = limit;

    const done = await waitForRootState(h, plan, /completed|stopped|failed/, CHANNELS.staging, 180_000);
    expect(done.text.includes('completed') ? 'completed' : `${done.text}: ${lastReplies(plan)}`).toBe('completed');
    // Each control plane reset once by the reset step and again (at least once) by the wait, before the one bootstrap.
    const bootstrapAt = h.sim.events.find((e) => e.kind === 'etcd-bootstrap')!.at;
    for (const cp of STAGING_CPS) {
      expect(resets().filter((e) => e.node === cp && e.at < bootstrapAt).length).toBeGreaterThanOrEqual(2);
      expect(resetCalls().filter((c) => c.argv[c.argv.indexOf('--nodes') + 1] === cp).length).toBeGreaterThanOrEqual(2);
    }
    expect(h.sim.bootstrapCount('staging')).toBe(1);
    const wait = auditLines(h, plan, CHANNELS.staging).find((l) => l.includes('service etcd Preparing'));
    expect(wait).toContain('reset again after its etcd was Failed (join limit)');
  }, 240_000);

  it('checks the snapshot again right before the bootstrap: one pruned while approvals waited is not restored, and a Retry passes once it is back', async () => {
    h = await startHarness(OPTIONS);
    const plan = await requestRehearsal();
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    await waitForApprovalRequest(h, plan, CHANNELS.staging, 60_000);
    // Retention prunes the verified snapshot while the approvers decide.
    const snapshotCall = h.sim.calls.find((c) => c.bin === 'talosctl' && c.argv[0] === 'etcd' && c.argv[1] === 'snapshot')!;
    const written = isAbsolute(snapshotCall.argv[2]!) ? snapshotCall.argv[2]! : join(snapshotCall.cwd, snapshotCall.argv[2]!);
    // The bot names the file with its revision once talosctl wrote it.
    const named = (await readdir(dirname(written))).filter((f) => /^staging-.*-rev\d+\.db$/.test(f));
    expect(named).toHaveLength(1);
    const path = join(dirname(written), named[0]!);
    const kept = await readFile(path);
    await unlink(path);
    await approveTwice(plan);

    const stopped = await waitForRootState(h, plan, /completed|stopped|failed/, CHANNELS.staging, 180_000);
    expect(stopped.text).toContain('no longer passes the bot');
    expect(h.sim.bootstrapCount('staging')).toBe(0);
    expect(bootstrapCalls()).toEqual([]);
    expect(JSON.stringify(h.slack.thread(CHANNELS.staging, plan.root.ts))).toContain(`${path} is not there any more`);

    await writeFile(path, kept);
    const failure = await h.slack.waitFor(() =>
      h.slack.thread(CHANNELS.staging, plan.root.ts).find((m) => JSON.stringify(m.blocks ?? []).includes('"action_id":"talos-op-retry"')),
    );
    await h.slack.clickButton({ user: USERS.alice, channel: CHANNELS.staging, messageTs: failure.ts, actionId: 'talos-op-retry' });
    const done = await waitForRootState(h, plan, /completed|failed/, CHANNELS.staging, 180_000);
    expect(done.text.includes('completed') ? 'completed' : `${done.text}: ${lastReplies(plan)}`).toBe('completed');
    expect(h.sim.bootstrapCount('staging')).toBe(1);
  }, 240_000);

  it('refuses the rehearsal before anything is taken or reset when a control plane keeps Longhorn data on EPHEMERAL', async () => {
    const shape = stagingThreeShape();
    // Longhorn's own default data path, /var/lib/longhorn/, on the second control plane: EPHEMERAL, which the reset wipes.
    // And the third's /var/mnt/longhorn is a user volume of type directory: a folder on EPHEMERAL too.
    shape.nodes = shape.nodes.map((n, i) =>
      i === 1 ? { ...n, longhornDataPath: '/var/lib/longhorn/' } : i === 2 ? { ...n, longhornVolumeType: 'directory' as const } : n,
    );
    h = await startHarness({ ...OPTIONS, clusters: [shape, productionShape()] });
    const plan = await requestRehearsal();

    expect(plan.root.text).toContain('refused');
    const said = JSON.stringify(h.slack.thread(CHANNELS.staging, plan.root.ts)) + plan.root.text + JSON.stringify(plan.root.blocks);
    expect(said).toMatch(
      new RegExp(`talos-stg-cp-2 \\(${STAGING_CPS[1]!.replace(/\./g, '\\.')}\\): disk default-disk-[0-9a-f]+ at /var/lib/longhorn/`),
    );
    expect(said).toMatch(
      new RegExp(
        `talos-stg-cp-3 \\(${STAGING_CPS[2]!.replace(/\./g, '\\.')}\\): disk default-disk-[0-9a-f]+ at /var/mnt/longhorn, user volume u-longhorn is a directory on EPHEMERAL`,
      ),
    );
    expect(said).toContain('a Talos user volume of its own partition, mounted at /var/mnt/longhorn');
    expect(said).not.toContain('talos-stg-cp-1 (');
    // Nothing was taken, reset or bootstrapped.
    expect(h.sim.events.filter((e) => e.cluster === 'staging' && e.kind === 'snapshot')).toEqual([]);
    expect(resetCalls()).toEqual([]);
    expect(h.sim.bootstrapCount('staging')).toBe(0);
  });
});
