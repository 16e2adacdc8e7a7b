import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { assetChunks } from '../sim/image-factory.ts';
import { schematicId } from '../sim/schematics.ts';
import {
  approve,
  approveUntilDone,
  auditLines,
  clickStart,
  opLink,
  requestUpgrade,
  waitForApprovalRequest,
  waitForRootState,
} from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
let h: Harness;

// A fresh estate, Redis and bot per test: upgrades change the simulated clusters for good.
beforeEach(async () => {
  h = await startHarness();
});

afterEach(async () => {
  await h?.stop();
});

function upgradeCalls(since: number) {
  return h.sim.calls.slice(since).filter((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade');
}

/** The sha256 of the ISO the simulated Image Factory serves, computed here from its bytes. */
function isoSha256(schematic: string, version: string, asset: string): string {
  const hash = createHash('sha256');
  for (const chunk of assetChunks(schematic, version, asset)) hash.update(chunk);
  return hash.digest('hex');
}

function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i < 0 ? undefined : argv[i + 1];
}

describe('Talos upgrade of production (three control planes)', () => {
  it('plans, snapshots, asks before each control plane, upgrades one node at a time and finishes with the follow-up', async () => {
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    const planBlocks = JSON.stringify(plan.root.blocks);
    expect(plan.root.text).toContain('Talos upgrade v1.11.6 → v1.12.11: production');
    expect(planBlocks).toContain('release notes');
    expect(planBlocks).toContain('"action_id":"talos-op-start"');
    expect(upgradeCalls(since)).toEqual([]);

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);
    expect(done.text).toContain('completed');

    const calls = upgradeCalls(since);
    expect(calls.map((c) => flag(c.argv, '--nodes'))).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    // The runbook's design: the control planes run the default schematic, which carries Longhorn's extensions, and keep it.
    const defaultSchematic = h.sim.cluster('production').terraform.defaultSchematic;
    for (const call of calls) {
      expect(flag(call.argv, '--image')).toBe(`factory.talos.dev/nocloud-installer/${defaultSchematic}:${TARGET}`);
      const node = flag(call.argv, '--nodes')!;
      expect(flag(call.argv, '--endpoints')?.split(',')).not.toContain(node);
      expect(call.argv).toContain('--wait');
    }
    for (const node of ['10.0.30.11', '10.0.30.12', '10.0.30.13']) {
      expect(h.sim.upgradeCount('production', node)).toBe(1);
      expect(h.sim.node('production', node).talosVersion).toBe(TARGET);
      expect(h.sim.node('production', node).schematic).toBe(defaultSchematic);
    }
    expect(h.sim.maxControlPlanesDownAtOnce('production')).toBe(1);

    await h.slack.waitFor(() => h.slack.uploadedFiles().length > 0);
    const thread = h.slack.thread(CHANNELS.production, plan.root.ts);
    // Each request is one reply of its own, broadcast to the channel.
    const approvals = thread.filter((m) =>
      /^🔐 production · control plane \d of 3 · /.test(h.slack.versions(CHANNELS.production, m.ts)[0]?.text ?? ''),
    );
    expect(
      approvals.map((m) => /^#\d+ approval requested: (10\.0\.30\.\d+)$/m.exec(h.slack.versions(CHANNELS.production, m.ts)[0]!.text)?.[1]),
    ).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    for (const a of approvals) expect(h.slack.message(CHANNELS.production, a.ts)?.text).toMatch(/^#\d+ ✅ Approved by <@U0CAROL> at /m);
    // The previous node's result and the etcd table go out in the reply before the request: the request holds only itself.
    const before = thread[thread.findIndex((m) => m.ts === approvals[1]!.ts) - 1]!;
    expect(before.text).toMatch(/^#\d+ upgraded: control plane talos-prd-cp-1 \(10\.0\.30\.11/m);
    expect(before.text).toMatch(/^#\d+ etcd before talos-prd-cp-2: the table is in the attached etcd-before-talos-prd-cp-2-\S+\.txt$/m);
    expect(h.slack.versions(CHANNELS.production, approvals[1]!.ts)[0]!.text).not.toContain('upgraded:');
    expect(thread.some((m) => m.text.includes('etcd snapshot taken'))).toBe(true);
    expect(thread.some((m) => m.text.includes(`talos_version = "${TARGET}"`))).toBe(true);
    // The follow-up's ISO comes from IMAGE_FACTORY_URL, for the nodes' architecture, with the sha256 of the bytes served.
    const schematic = h.sim.cluster('production').terraform.defaultSchematic;
    const followUp = thread.find((m) => m.text.includes('Terraform follow-up'))?.text ?? '';
    expect(followUp).toContain(`${h.sim.imageFactoryUrl}/image/${schematic}/${TARGET}/nocloud-amd64.iso`);
    expect(followUp).toContain(`(${64 * 64 * 1024} bytes, as Image Factory served it to the bot)`);
    expect(followUp).toContain(`\`echo '${isoSha256(schematic, TARGET, 'nocloud-amd64.iso')}  talos-nocloud-amd64.iso' | sha256sum -c\``);
    expect(followUp).toContain('`isos:iso/talos-nocloud-amd64.iso`');
    const snapshots = readdirSync(h.sim.cluster('production').snapshotDir);
    expect(snapshots.some((f) => /^production-\d{8}T\d{6}Z-rev\d+\.db$/.test(f))).toBe(true);
    expect(snapshots.some((f) => f.endsWith('.part'))).toBe(false);
    const record = await h.slack.waitFor(() => h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`));
    expect(record?.content).toContain('| 2 | upgrade-control-plane | 10.0.30.11 |');
    expect(record?.content).toContain('Snapshot: production-');
    expect(await h.command('status')).toContain('no operation holds it');
  });
});

describe('Talos upgrade of staging (one control plane, one worker)', () => {
  it('upgrades the worker first without approval, then asks before the control plane', async () => {
    // These nodes are arm64 machines: the follow-up's ISO is theirs.
    for (const node of h.sim.cluster('staging').nodes) node.arch = 'arm64';
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`, { channel: CHANNELS.staging });
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    const request = await waitForApprovalRequest(h, plan, CHANNELS.staging);
    expect(request.text).toContain('10.0.20.204');
    expect(h.sim.node('staging', '10.0.20.205').talosVersion).toBe(TARGET);
    expect(h.sim.node('staging', '10.0.20.204').talosVersion).toBe('v1.11.6');
    await approve(h, request, USERS.carol, CHANNELS.staging);
    const done = await waitForRootState(h, plan, /completed|stopped/, CHANNELS.staging);
    expect(done.text).toContain('completed');
    const schematic = h.sim.cluster('staging').terraform.defaultSchematic;
    expect(upgradeCalls(since).map((c) => [flag(c.argv, '--nodes'), flag(c.argv, '--image')])).toEqual([
      ['10.0.20.205', `factory.talos.dev/nocloud-installer/${schematic}:${TARGET}`],
      ['10.0.20.204', `factory.talos.dev/nocloud-installer/${schematic}:${TARGET}`],
    ]);
    const followUp = await h.slack.waitFor(() =>
      h.slack.thread(CHANNELS.staging, plan.root.ts).find((m) => m.text.includes('Terraform follow-up')),
    );
    expect(followUp?.text).toContain(`${h.sim.imageFactoryUrl}/image/${schematic}/${TARGET}/nocloud-arm64.iso`);
    expect(followUp?.text).toContain(
      `\`echo '${isoSha256(schematic, TARGET, 'nocloud-arm64.iso')}  talos-nocloud-arm64.iso' | sha256sum -c\``,
    );
  });

  it('says why the checksum is missing when Image Factory does not serve the ISO, and completes all the same', async () => {
    // Arrange
    const schematic = h.sim.cluster('staging').terraform.defaultSchematic;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`, { channel: CHANNELS.staging });
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    await approve(h, await waitForApprovalRequest(h, plan, CHANNELS.staging), USERS.carol, CHANNELS.staging);

    // Act: once the last node has pulled its installer, the factory forgets the schematic (a 404 for its ISO)
    await h.slack.waitFor(() => (h.sim.upgradeCount('staging', '10.0.20.204') === 1 ? true : undefined));
    delete h.sim.state.schematics[schematic];
    const done = await waitForRootState(h, plan, /completed|stopped/, CHANNELS.staging);

    // Assert
    expect(done.text).toContain('completed');
    const followUp = await h.slack.waitFor(() =>
      h.slack.thread(CHANNELS.staging, plan.root.ts).find((m) => m.text.includes('Terraform follow-up')),
    );
    expect(followUp?.text).toContain(`${h.sim.imageFactoryUrl}/image/${schematic}/${TARGET}/nocloud-amd64.iso`);
    expect(followUp?.text).toContain(
      'the checksum could not be computed (Image Factory answered 404 Not Found): compute it from the download yourself',
    );
  });
});

describe('preflight refusals touch nothing and say what to do', () => {
  async function refused(text: string, expected: RegExp, channel: string = CHANNELS.production): Promise<void> {
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, text, { channel });
    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toMatch(expected);
    expect(JSON.stringify(plan.root.blocks)).not.toContain('talos-op-start');
    expect(upgradeCalls(since)).toEqual([]);
  }

  it('refuses skipping a minor', () => refused('upgrade talos v1.13.9', /one adjacent minor|1\.12/));
  it('refuses a patch that is not the latest of its minor', () => refused('upgrade talos v1.12.10', /v1\.12\.11/));
  it('refuses a downgrade', () => refused('upgrade talos v1.10.9', /downgrade|older|newer/i));
  it('refuses a mixed cluster', async () => {
    h.sim.node('production', '10.0.30.13').talosVersion = 'v1.11.5';
    await refused(`upgrade talos ${TARGET}`, /mixed Talos versions/);
  });
  it('refuses when the health gate fails', async () => {
    h.sim.faults.set('production', { fluxStalled: ['apps'] });
    await refused(`upgrade talos ${TARGET}`, /health gate failed/);
  });
  it('refuses when the running Kubernetes is not supported by the target', async () => {
    for (const node of h.sim.cluster('production').nodes) node.kubeletVersion = 'v1.29.4';
    try {
      await refused(`upgrade talos ${TARGET}`, /does not support the running Kubernetes/);
    } finally {
      for (const node of h.sim.cluster('production').nodes) node.kubeletVersion = 'v1.34.1';
    }
  });

  it('refuses a malformed version at once, before any job', async () => {
    const ack = await h.command('upgrade talos v1.12.11;id');
    expect(ack).toContain('contains characters');
    expect(await h.command('upgrade talos 1.x')).toContain('is not a Talos version');
  });

  it("refuses a user who is not an operator, and a command from another cluster's channel", async () => {
    expect(await h.command(`upgrade talos ${TARGET}`, { user: USERS.eve })).toContain('Only operators of *production*');
    expect(await h.command(`upgrade talos ${TARGET} production`, { channel: CHANNELS.staging })).toContain(
      'taken only in its maintenance channel',
    );
  });
});

describe('the version rules: the latest patch of each minor, and a same-version schematic change', () => {
  it('refuses a minor upgrade from an older patch of the running minor, and names the patch to run first as an operation of its own', async () => {
    for (const node of h.sim.cluster('production').nodes) node.talosVersion = 'v1.11.5';
    const since = h.sim.calls.length;

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toContain(
      'the cluster runs v1.11.5, not v1.11.6, the latest patch of 1.11: patch first, as an operation of its own (`/talos upgrade talos v1.11.6`), then upgrade to v1.12.11',
    );
    expect(upgradeCalls(since)).toEqual([]);
  });

  it('refuses the running version when no node would change, and re-installs staging with the schematic Terraform now declares', async () => {
    const refused = await requestUpgrade(h, 'upgrade talos v1.11.6', { channel: CHANNELS.staging });
    expect(refused.root.text).toContain('refused');
    expect(JSON.stringify(refused.root.blocks)).toContain(
      'the cluster already runs v1.11.6 with that schematic on every node: nothing to upgrade or re-install',
    );

    // Terraform now declares qemu-guest-agent in the default schematic.
    const declared = schematicId(['siderolabs/qemu-guest-agent']);
    h.sim.state.schematics[declared] = ['siderolabs/qemu-guest-agent'];
    h.sim.cluster('staging').terraform.defaultSchematic = declared;
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, 'upgrade talos v1.11.6', { channel: CHANNELS.staging });
    const planBlocks = JSON.stringify(plan.root.blocks);
    expect(planBlocks).toContain('A re-install on v1.11.6, the version every node runs: only the installer image changes');
    expect(planBlocks).toContain('⚠ Only control plane: the Kubernetes API and etcd are down while talos-stg-cp-1 reboots');
    expect(planBlocks).not.toContain('talos#11830');
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    const request = await waitForApprovalRequest(h, plan, CHANNELS.staging);
    await approve(h, request, USERS.carol, CHANNELS.staging);
    const done = await waitForRootState(h, plan, /completed|stopped/, CHANNELS.staging);

    expect(done.text).toContain('completed');
    const image = `factory.talos.dev/nocloud-installer/${declared}:v1.11.6`;
    // The worker is waited on through the control plane; the only control plane is only asked, then polled back.
    expect(upgradeCalls(since).map((c) => [flag(c.argv, '--nodes'), flag(c.argv, '--image'), c.argv.includes('--wait')])).toEqual([
      ['10.0.20.205', image, true],
      ['10.0.20.204', image, false],
    ]);
    for (const address of ['10.0.20.204', '10.0.20.205']) {
      const node = h.sim.node('staging', address);
      expect([address, node.talosVersion, node.schematic]).toEqual([address, 'v1.11.6', declared]);
    }
    const thread = h.slack.thread(CHANNELS.staging, plan.root.ts).map((m) => h.slack.versions(CHANNELS.staging, m.ts)[0]?.text ?? m.text);
    expect(thread.some((text) => /re-installed: worker talos-stg-w-1/.test(text))).toBe(true);
  });
});

describe('approvals', () => {
  it('ignores an unauthorized click and a repeated one, and says why', async () => {
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const request = await waitForApprovalRequest(h, plan);

    await approve(h, request, USERS.eve);
    await approve(h, request, USERS.alice);
    const refusals = await h.slack.waitFor(() => {
      const list = h.slack.ephemerals().filter((e) => e.text.startsWith("Only production's approvers can approve: "));
      return list.length >= 2 ? list : undefined;
    });
    expect(refusals.map((e) => e.user ?? '').sort((a, b) => a.localeCompare(b))).toEqual([USERS.alice, USERS.eve]);
    expect(h.sim.upgradeCount('production', '10.0.30.11')).toBe(0);

    await approve(h, request, USERS.dave); // approver through the S0SRE user group
    await h.slack.waitFor(() => /Approved by <@U0DAVE>/.test(h.slack.message(CHANNELS.production, request.ts)?.text ?? ''));
    await approve(h, request, USERS.carol);
    await h.slack.waitFor(() => h.slack.ephemerals().find((e) => e.user === USERS.carol && /already approved by <@U0DAVE>/.test(e.text)));

    const second = await waitForApprovalRequest(h, plan);
    expect(second.text).toContain('10.0.30.12');
    expect(h.sim.upgradeCount('production', '10.0.30.11')).toBe(1);
    expect(await h.command(`cancel ${plan.opId}`)).toContain(`Cancelled ${opLink(plan)}`);
    await waitForRootState(h, plan, /cancelled/);
    // The root shows the cancel first; the open request loses its buttons right after.
    await h.slack.waitFor(() => !JSON.stringify(h.slack.message(CHANNELS.production, second.ts)?.blocks).includes('talos-step-approve'), {
      description: 'the open request without its buttons',
    });
  });
});

describe('stop at the first failure', () => {
  it('stops on a silent revert of the second control plane, never touches the third, and offers an explicit retry, no rollback', async () => {
    h.sim.faults.set('production', { upgradeSilentRevert: ['10.0.30.12'] });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);
    expect(done.text).toContain('stopped at the first failure');
    expect(h.sim.upgradeCount('production', '10.0.30.13')).toBe(0);
    expect(h.sim.node('production', '10.0.30.13').talosVersion).toBe('v1.11.6');
    const failure = h.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.startsWith('#') && m.text.includes('❌ Stopped'));
    expect(failure?.text).toMatch(/came back on v1\.11\.6, not v1\.12\.11/);
    expect(JSON.stringify(failure?.blocks)).not.toContain('talos-node-rollback');
    expect(JSON.stringify(failure?.blocks)).toContain('Retry the upgrade of this node');

    const next = await h.command(`upgrade talos ${TARGET}`);
    expect(next).toContain(`held by ${opLink(plan)}`);

    expect(await h.command(`cancel ${plan.opId}`)).toContain('is free for the next operation');
  });
});

describe('crash and resume', () => {
  it('survives a kill of the bot in the middle of a node without upgrading any node twice', async () => {
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    await approve(h, await waitForApprovalRequest(h, plan));
    const second = await h.slack.waitFor(
      () => {
        const r = h.slack.thread(CHANNELS.production, plan.root.ts).filter((m) => /^#\d+ approval requested: 10\.0\.30\.12$/m.test(m.text));
        return r[0];
      },
      { timeoutMs: 30_000 },
    );
    await approve(h, second);
    await h.slack.waitFor(() => h.sim.events.find((e) => e.kind === 'upgrade-start' && e.node === '10.0.30.12'), { timeoutMs: 30_000 });
    await h.bot.kill();
    await h.bot.start();
    const done = await approveUntilDone(h, plan);
    expect(done.text).toContain('completed');
    for (const node of ['10.0.30.11', '10.0.30.12', '10.0.30.13']) expect(h.sim.upgradeCount('production', node)).toBe(1);
    const results = auditLines(h, plan).filter((l) => /^#\d+ upgraded: /.test(l));
    expect(results.filter((l) => /was observed, not requested again|only the checks after it ran again/.test(l))).toEqual([
      expect.stringContaining('(10.0.30.12'),
    ]);
  });
});

describe('crash before the request reached the node', () => {
  it('sends the upgrade again when the node shows it never got it, and still upgrades every node once', async () => {
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    // talosctl hangs before it reaches the node: the bot has recorded the request, the node never saw it.
    h.sim.faults.set('production', { hang: ['upgrade'] });
    await approve(h, await waitForApprovalRequest(h, plan));
    await h.slack.waitFor(
      () => h.sim.calls.find((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade' && flag(c.argv, '--nodes') === '10.0.30.11'),
      { timeoutMs: 30_000 },
    );
    await h.bot.kill();
    h.sim.faults.clear('production');
    expect(h.sim.upgradeCount('production', '10.0.30.11')).toBe(0);

    await h.bot.start();
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    for (const node of ['10.0.30.11', '10.0.30.12', '10.0.30.13']) expect(h.sim.upgradeCount('production', node)).toBe(1);
    const results = auditLines(h, plan).filter((l) => /^#\d+ upgraded: /.test(l));
    expect(results.filter((l) => l.includes('so it was sent again'))).toEqual([expect.stringContaining('(10.0.30.11')]);
  });
});

describe('crash while the node validates its upgrade', () => {
  it('does not upgrade it twice when the request sent again meets the one still running', async () => {
    await h.stop();
    h = await startHarness({ env: { NODE_READY_TIMEOUT_SECONDS: '60', STEP_TIMEOUT_SECONDS: '60' } });
    const node = '10.0.30.11';
    // The first request stays in its validation, holding the upgrade mutex, until the request sent again has met it:
    // the node shows nothing of it (not cordoned, not rebooted) however long the bot takes to start again.
    h.sim.faults.set('production', { upgradeValidating: [node] });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    await approve(h, await waitForApprovalRequest(h, plan));
    await h.slack.waitFor(() => h.sim.cluster('production').etcd.upgradeMutexHolder === node, { timeoutMs: 30_000, intervalMs: 5 });
    await h.bot.kill();
    await h.bot.start();
    const refusals = () => h.sim.events.filter((e) => e.cluster === 'production' && e.node === node && e.kind === 'upgrade-rejected');
    await h.slack.waitFor(() => refusals().length > 0, { timeoutMs: 60_000 });
    h.sim.faults.clear('production', 'upgradeValidating');

    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    expect(refusals().map((e) => e.detail)).toEqual(['failed to acquire upgrade mutex: mutex: Locked by another session']);
    for (const n of ['10.0.30.11', '10.0.30.12', '10.0.30.13']) expect(h.sim.upgradeCount('production', n)).toBe(1);
    const first = auditLines(h, plan).find((l) => /^#\d+ upgraded: control plane \S+ \(10\.0\.30\.11/.test(l));
    expect(first).toContain('nothing of the request showed on the node (not rebooted, not cordoned), so it was sent again');
  });
});

describe('/talos snapshot', () => {
  it('writes a verified snapshot off-cluster and posts its identifier', async () => {
    const ack = await h.command('snapshot');
    const opId = /op-[a-z0-9]+/.exec(ack)![0];
    const root = await h.slack.waitFor(
      () => h.slack.channelMessages(CHANNELS.production).find((m) => m.text.includes(opId) && m.text.startsWith('✅')),
      { timeoutMs: 30_000 },
    );
    const id = /`(production-[^`]+)`/.exec(root.text)![1]!;
    const path = join(h.sim.cluster('production').snapshotDir, `${id}.db`);
    expect(existsSync(path)).toBe(true);
    expect(existsSync(`${path}.part`)).toBe(false);
    const sha = readFileSync(`${path}.sha256`, 'utf8');
    expect(sha).toMatch(new RegExp(`^[0-9a-f]{64}  ${id}\\.db\\n$`));
    expect(await h.command('snapshot', { user: USERS.eve })).toContain('Only operators');
  });
});
