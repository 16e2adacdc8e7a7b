import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assetChunks } from '../sim/image-factory.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { storedOperation } from '../support/stored-operation.ts';
import {
  approve,
  clickStart,
  originalButtonValue,
  requestUpgrade,
  tickAll,
  waitForApprovalMatching,
  waitForRootState,
} from '../support/upgrade-flow.ts';

const VM = (host: string) => `proxmox_virtual_environment_vm.talos["${host}"]`;

function talosctlCalls(h: Harness, cluster: string, ...path: string[]) {
  return h.sim.calls.filter((c) => c.bin === 'talosctl' && c.cluster === cluster && path.every((p, i) => c.argv[i] === p));
}

function tofuCalls(h: Harness, cluster: string, subcommand: string) {
  return h.sim.calls.filter((c) => c.bin === 'tofu' && c.cluster === cluster && c.argv[0] === subcommand);
}

function events(h: Harness, cluster: string, node: string): string[] {
  return h.sim.events.filter((e) => e.cluster === cluster && e.node === node).map((e) => e.kind);
}

describe('a failed production control plane', () => {
  let h: Harness;
  beforeAll(async () => {
    // Alice is an approver as well as an operator: four eyes keep her from approving what she asked for.
    h = await startHarness({ etcd: 'real', inventory: { approvers: [USERS.carol, USERS.alice, 'S0SRE'] } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('is replaced end to end: member removed, Node deleted, the reviewed VM replacement applied, the new member votes', async () => {
    // Arrange
    h.sim.failMachine('production', 'talos-prd-cp-2');
    await h.sim.etcdSettled('production');
    const oldMember = h.sim.node('production', '10.0.30.12').etcdMemberId;

    // Act: the request, the plan with its arithmetic, Start; then both approvals, each tried first by the requester.
    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');
    const planBlocks = JSON.stringify(plan.root.blocks);
    await clickStart(h, plan, USERS.alice);
    const removal = await waitForApprovalMatching(h, plan, /remove the etcd member of talos-prd-cp-2/);
    const removalsBefore = talosctlCalls(h, 'production', 'etcd', 'remove-member').length;
    await approve(h, removal, USERS.alice);
    await h.slack.waitFor(() => h.slack.ephemerals(CHANNELS.production, USERS.alice).find((e) => /four eyes/.test(e.text)), {
      description: 'the four-eyes refusal of the removal',
    });
    const removalsAfterRequester = talosctlCalls(h, 'production', 'etcd', 'remove-member').length;
    await approve(h, removal, USERS.carol);
    const apply = await waitForApprovalMatching(h, plan, /tofu apply: replace the VM of talos-prd-cp-2/);
    const applyCard = JSON.stringify(apply.blocks);
    await approve(h, apply, USERS.alice);
    await h.slack.waitFor(
      () => h.slack.ephemerals(CHANNELS.production, USERS.alice).filter((e) => /four eyes/.test(e.text)).length >= 2 || undefined,
      { description: 'the four-eyes refusal of the apply' },
    );
    const appliesAfterRequester = tofuCalls(h, 'production', 'apply').length;
    // An approver's Approve without the ISO tick is refused, and the request keeps waiting.
    await h.slack.clickButton({
      user: USERS.carol,
      channel: CHANNELS.production,
      messageTs: apply.ts,
      actionId: 'talos-step-approve',
      value: originalButtonValue(h, CHANNELS.production, apply.ts, 'talos-step-approve'),
    });
    const unticked = await h.slack.waitFor(
      () =>
        h.slack
          .ephemerals(CHANNELS.production, USERS.carol)
          .find((e) => /Tick “the ISO at isos:iso\/talos-nocloud-amd64\.iso/.test(e.text)),
      { description: 'the refusal of an approval without the ISO tick' },
    );
    const untickedOp = await storedOperation(h, plan.opId);
    const appliesAfterUnticked = tofuCalls(h, 'production', 'apply').length;
    const applyTicks = tickAll(h, CHANNELS.production, apply.ts);
    await approve(h, apply, USERS.carol);
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.production, 180_000);
    const status = await h.command('status');

    // Assert: /talos status names the replacement as people do, and shows its final gate as the cluster's newest.
    expect(status).toContain('last: Replacement of talos-prd-cp-2 completed');
    expect(status).toMatch(/\nLast health gate: (✅ passed|⚠️ passed with warnings) <!date[^>]+> · from Replacement of talos-prd-cp-2 \(/);
    expect(status).not.toMatch(/node-replace|of 10\.0\.30\.12/);
    // The apply's card said nothing was applied while it waited; approved, it no longer does.
    expect(applyCard).toContain('Nothing was applied yet.');
    const decidedApply = JSON.stringify(h.slack.message(CHANNELS.production, apply.ts)?.blocks ?? []);
    expect(decidedApply).toContain('✅ Approved by');
    expect(decidedApply).not.toContain('Nothing was applied yet');
    // The plan stated the node's state and the quorum arithmetic.
    expect(planBlocks).toContain('does not answer talosctl');
    expect(planBlocks).toContain(
      '3 members now, 2 healthy, quorum 2; after its member is removed 2 members remain (2 healthy), quorum 2; during the replacement the cluster survives no further failure',
    );
    expect(planBlocks).toContain(VM('talos-prd-cp-2').replaceAll('"', '\\"'));
    expect([removalsBefore, removalsAfterRequester, appliesAfterRequester]).toEqual([0, 0, 0]);
    expect(applyCard).toMatch(/sha256 `[0-9a-f]{12}…`/);
    // The apply's card shows the ISO URL and the full sha256 of the file the factory serves; the tick is bound to it.
    const iso = (untickedOp.data as { terraform?: { iso?: { url: string; sha256?: string } } }).terraform?.iso;
    const schematic = h.sim.cluster('production').terraform.defaultSchematic;
    const version = /\/image\/[0-9a-f]+\/(v[^/]+)\/nocloud-amd64\.iso$/.exec(iso?.url ?? '')?.[1] ?? '?';
    const served = createHash('sha256');
    for (const chunk of assetChunks(schematic, version, 'nocloud-amd64.iso')) served.update(chunk);
    const sha256 = served.digest('hex');
    expect(iso?.url).toBe(`${h.env['IMAGE_FACTORY_URL']?.replace(/\/+$/, '')}/image/${schematic}/${version}/nocloud-amd64.iso`);
    expect(iso?.sha256).toBe(sha256);
    expect(applyCard).toContain(sha256);
    expect(applyTicks).toEqual({ 'talos-op-start-confirm': [`iso-sha256:${sha256}`] });
    expect(unticked.text).toContain('Nothing changed');
    expect(appliesAfterUnticked).toBe(0);
    expect(untickedOp.state).toBe('awaiting-approval');
    expect(untickedOp.approvals.at(-1)).toMatchObject({ step: 'tofu-apply', state: 'pending' });
    expect(done.text).toContain('completed');
    // Seven steps, one node: the summary counts nodes.
    expect(done.text).toMatch(/production on 1 node\b/);
    // The member went through a healthy control plane, never the failed node.
    const removals = talosctlCalls(h, 'production', 'etcd', 'remove-member');
    expect(removals).toHaveLength(1);
    expect(removals[0]!.argv[2]).toBe(oldMember);
    expect(removals[0]!.argv.join(' ')).not.toMatch(/--nodes 10\.0\.30\.12\b/);
    const plans = tofuCalls(h, 'production', 'plan');
    expect(plans.at(-1)!.argv).toContain(`-replace=${VM('talos-prd-cp-2')}`);
    expect(tofuCalls(h, 'production', 'apply')).toHaveLength(1);
    const kinds = events(h, 'production', '10.0.30.12');
    const order = ['etcd-member-removed', 'node-deleted', 'vm-replaced', 'etcd-learner-added', 'etcd-learner-promoted'].map((k) =>
      kinds.indexOf(k),
    );
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('completed');
    // The record keeps the full hash and who ticked it.
    const applyApproval = op.approvals.find((a) => a.step === 'tofu-apply' && a.by === USERS.carol);
    expect(applyApproval?.confirmed).toEqual([expect.stringContaining(`matches sha256 ${sha256}`)]);
    expect(op.audit.find((e) => e.event.startsWith('approved') && e.actor === USERS.carol && e.detail?.includes(sha256))).toBeDefined();
    const data = op.data as { removedMember?: { id: string }; joinedMember?: { id: string; hostname: string }; vmAddress: string };
    expect(data.removedMember?.id).toBe(oldMember);
    expect(data.joinedMember?.hostname).toBe('talos-prd-cp-2');
    expect(data.joinedMember?.id).toBe(h.sim.node('production', '10.0.30.12').etcdMemberId);
    expect(data.joinedMember?.id).not.toBe(oldMember);
    expect(op.steps.map((s) => [s.kind, s.status])).toEqual([
      ['snapshot', 'done'],
      ['remove-member', 'done'],
      ['delete-node', 'done'],
      ['replace-plan', 'done'],
      ['tofu-apply', 'done'],
      ['node-join', 'done'],
      ['replace-gate', 'done'],
    ]);
    const record = await h.slack.waitFor(() => h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`));
    expect(record.content).toContain(`etcd member ${oldMember} (talos-prd-cp-2) removed`);
    expect(record.content).toContain(`member ${data.joinedMember!.id} (talos-prd-cp-2) joined and votes`);
    expect(h.slack.uploadedFiles().some((f) => f.filename === `${plan.opId}-tofu-plan.txt`)).toBe(true);
  }, 300_000);
});

describe('refusals before anything changes', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ etcd: 'real' });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('replaces a retired node that answers and is Ready: reset gracefully after an approval, then its VM replaced', async () => {
    // Act: the operator's Start on a plan that names the node retired chooses this path; an approver allows the reset.
    const plan = await requestUpgrade(h, 'replace talos-stg-w-1', { channel: CHANNELS.staging });
    const card = JSON.stringify(plan.root.blocks);
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    await approve(
      h,
      await waitForApprovalMatching(h, plan, /reset the retired talos-stg-w-1/, CHANNELS.staging),
      USERS.carol,
      CHANNELS.staging,
    );
    await approve(
      h,
      await waitForApprovalMatching(h, plan, /tofu apply: replace the VM of talos-stg-w-1/, CHANNELS.staging),
      USERS.carol,
      CHANNELS.staging,
    );
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.staging, 180_000);

    // Assert
    expect(card).toContain('this replaces a *retired* node');
    expect(card).toContain('`/talos remove 10.0.20.205`');
    expect(done.text).toContain('completed');
    const op = await storedOperation(h, plan.opId);
    expect(op.steps.map((s) => [s.kind, s.status])).toEqual([
      ['snapshot', 'done'],
      ['reset-node', 'done'],
      ['delete-node', 'done'],
      ['replace-plan', 'done'],
      ['tofu-apply', 'done'],
      ['node-join', 'done'],
      ['replace-gate', 'done'],
    ]);
    const kinds = events(h, 'staging', '10.0.20.205');
    const order = ['reset', 'node-deleted', 'vm-replaced', 'up'].map((k) => kinds.indexOf(k));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  }, 240_000);

  it('refuses the only control plane at once: disaster recovery', async () => {
    expect(await h.command('replace 10.0.20.204', { channel: CHANNELS.staging })).toContain(
      'is the only control plane of *staging*: replacing it leaves no etcd member to keep the cluster, which is etcd disaster recovery',
    );
  });

  it('checks quorum again at the approval: another control plane lost since the plan stops the removal', async () => {
    // Arrange
    h.sim.failMachine('production', 'talos-prd-cp-2');
    await h.sim.etcdSettled('production');
    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');
    await clickStart(h, plan, USERS.alice);
    const removal = await waitForApprovalMatching(h, plan, /remove the etcd member of talos-prd-cp-2/);

    // Act: a second control plane fails before the approver clicks.
    h.sim.failMachine('production', 'talos-prd-cp-3');
    await approve(h, removal, USERS.carol);
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.production, 120_000);

    // Assert
    expect(done.text).toContain('stopped');
    const op = await storedOperation(h, plan.opId);
    const failed = op.steps.find((s) => s.status === 'failed');
    expect(failed?.kind).toBe('remove-member');
    expect(failed?.detail).toMatch(/quorum is already lost|cannot keep quorum|etcd membership unknown/);
    expect(failed?.issuedAt).toBeUndefined();
    expect(talosctlCalls(h, 'production', 'etcd', 'remove-member')).toEqual([]);
    expect(await h.command(`cancel ${plan.opId}`)).toContain('is free for the next operation');
  }, 180_000);

  it('refuses a replacement that would lose quorum: two of three control planes failed', async () => {
    // The machines the previous test failed stay failed.
    for (const host of ['talos-prd-cp-2', 'talos-prd-cp-3'])
      if (h.sim.node('production', host).failed !== true) h.sim.failMachine('production', host);
    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');
    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toMatch(
      /3 members now, [01] healthy, quorum 2: quorum is already lost, which is etcd disaster recovery/,
    );
    expect(talosctlCalls(h, 'production', 'etcd', 'remove-member')).toEqual([]);
    expect(tofuCalls(h, 'production', 'apply')).toEqual([]);
  }, 60_000);
});

describe('a replace plan with any other change, and a worker', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ etcd: 'real' });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('refuses a plan that changes more than the VM before any member is removed', async () => {
    // Arrange: a committed configuration change waits in the Terraform tree, so the replace plan carries it too.
    h.sim.failMachine('production', 'talos-prd-cp-2');
    await h.sim.etcdSettled('production');
    await h.sim.terraform.changePatch('production');
    await h.sim.terraform.commit('a patch not yet applied');

    // Act
    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');

    // Assert: the preflight's plan refuses it; nothing was removed, deleted or applied.
    const blocks = JSON.stringify(plan.root.blocks);
    expect(plan.root.text).toContain('refused');
    expect(blocks).toContain('the plan changes more than talos-prd-cp-2');
    expect(blocks).toContain('talos_machine_configuration_apply.this[\\"talos-prd-cp-1\\"]');
    expect(talosctlCalls(h, 'production', 'etcd', 'remove-member')).toEqual([]);
    expect(tofuCalls(h, 'production', 'apply')).toEqual([]);
    expect(events(h, 'production', '10.0.30.12')).not.toContain('node-deleted');
  }, 180_000);

  it('replaces a failed worker without the etcd step, which is not the staging rehearsal of a control plane', async () => {
    h.sim.failMachine('staging', 'talos-stg-w-1');
    const plan = await requestUpgrade(h, 'replace talos-stg-w-1', { channel: CHANNELS.staging });
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    // A worker has no member removal: the Node deletion is the first change, and asks first.
    await approve(
      h,
      await waitForApprovalMatching(h, plan, /delete the Node of talos-stg-w-1/, CHANNELS.staging),
      USERS.carol,
      CHANNELS.staging,
    );
    await approve(
      h,
      await waitForApprovalMatching(h, plan, /tofu apply: replace the VM of talos-stg-w-1/, CHANNELS.staging),
      USERS.carol,
      CHANNELS.staging,
    );
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.staging, 180_000);

    expect(done.text).toContain('completed');
    const op = await storedOperation(h, plan.opId);
    expect(op.steps.map((s) => s.kind)).toEqual(['snapshot', 'delete-node', 'replace-plan', 'tofu-apply', 'node-join', 'replace-gate']);
    expect(talosctlCalls(h, 'staging', 'etcd', 'remove-member')).toEqual([]);
    expect(tofuCalls(h, 'staging', 'apply')).toHaveLength(1);
    expect(events(h, 'staging', '10.0.20.205')).toContain('vm-replaced');
    expect(h.sim.node('staging', '10.0.20.205').failed).not.toBe(true);

    // The record keeps what the staging was: one control plane, and a worker replaced.
    expect(op.target).toMatchObject({ nodeRole: 'worker', clusterControlPlanes: 1 });
    // /talos gates reads the completed staging replacement from the records, and does not count it as the rehearsal.
    await h.command('gates', { channel: CHANNELS.production, user: USERS.alice });
    const rehearsal = await h.slack.waitFor(
      () =>
        h.slack
          .channelMessages(CHANNELS.production)
          .flatMap((root) => h.slack.thread(CHANNELS.production, root.ts))
          .find((m) => m.text.includes('Staging rehearsals') && JSON.stringify(m.blocks ?? []).includes('node replacement')),
      { timeoutMs: 60_000, description: 'the staging rehearsals gate' },
    );
    expect(JSON.stringify(rehearsal.blocks)).toMatch(
      new RegExp(
        `☐ node replacement: ${plan.opId} completed \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC but does not count: it replaced a worker\\. The runbook's rehearsal replaces a control plane on a staging of three control planes\\.`,
      ),
    );
    expect(JSON.stringify(rehearsal.blocks)).not.toContain('☑ node replacement');
  }, 240_000);
});
