import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { storedOperation, tamperStoredOperation } from '../support/stored-operation.ts';
import { approve, clickStart, requestUpgrade, waitForApprovalMatching, waitForRootState } from '../support/upgrade-flow.ts';

const CONFIG_APPLY = 'talos_machine_configuration_apply.this';
const TIE = { replace_triggered_by: ['proxmox_virtual_environment_vm.talos[each.key]'] };

function calls(h: Harness, bin: 'talosctl' | 'tofu', cluster: string, ...path: string[]) {
  return h.sim.calls.filter((c) => c.bin === bin && c.cluster === cluster && path.every((p, i) => c.argv[i] === p));
}

function kinds(h: Harness, cluster: string, node: string): string[] {
  return h.sim.events.filter((e) => e.cluster === cluster && e.node === node).map((e) => e.kind);
}

describe('the configuration apply of the new VM', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ etcd: 'real' });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('refuses, before any member is removed, a replacement whose plan would leave the new VM unconfigured', async () => {
    // Arrange: the estate no longer ties the configuration apply to its VM.
    await h.sim.terraform.setLifecycle('production', CONFIG_APPLY, {});
    await h.sim.terraform.commit('the configuration apply no longer follows its VM');
    h.sim.failMachine('production', 'talos-prd-cp-2');
    await h.sim.etcdSettled('production');

    // Act
    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');

    // Assert
    const blocks = JSON.stringify(plan.root.blocks);
    expect(plan.root.text).toContain('refused');
    expect(blocks).toContain('nothing in the plan configures the new VM');
    expect(blocks).toContain('replace_triggered_by = [proxmox_virtual_environment_vm.talos[each.key]]');
    expect(blocks).toContain('replaceConfigApply: true');
    expect(calls(h, 'tofu', 'production', 'plan').at(-1)?.argv).toContain(
      '-replace=proxmox_virtual_environment_vm.talos["talos-prd-cp-2"]',
    );
    expect(calls(h, 'talosctl', 'production', 'etcd', 'remove-member')).toEqual([]);
    expect(calls(h, 'tofu', 'production', 'apply')).toEqual([]);
    expect(h.sim.node('production', 'talos-prd-cp-2').etcdMember).toBe(true);
  }, 120_000);

  it('with the tie, replaces the node: the new VM is configured, joins and votes', async () => {
    await h.sim.terraform.setLifecycle('production', CONFIG_APPLY, TIE);
    await h.sim.terraform.commit('the configuration apply follows its VM again');

    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');
    const card = JSON.stringify(plan.root.blocks);
    await clickStart(h, plan, USERS.alice);
    await approve(h, await waitForApprovalMatching(h, plan, /remove the etcd member of talos-prd-cp-2/, CHANNELS.production), USERS.carol);
    const apply = await waitForApprovalMatching(h, plan, /tofu apply: replace the VM of talos-prd-cp-2/, CHANNELS.production);
    await approve(h, apply, USERS.carol);
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.production, 240_000);

    expect(done.text).toContain('completed');
    // The plan card, before anything changed: the replacement planned, and the destroy's graceful shutdown named.
    expect(card).toContain('A replace plan made now');
    expect(card).toContain('does not set stop_on_destroy');
    const op = await storedOperation(h, plan.opId);
    const planStep = op.steps.find((s) => s.kind === 'replace-plan');
    expect(planStep?.detail).toContain(`${CONFIG_APPLY}["talos-prd-cp-2"] (replace, tied to the VM by replace_triggered_by)`);
    expect(planStep?.detail).toContain('does not set stop_on_destroy');
    expect(kinds(h, 'production', '10.0.30.12')).toEqual(
      expect.arrayContaining(['vm-replaced', 'etcd-learner-added', 'etcd-learner-promoted']),
    );
    const node = h.sim.node('production', 'talos-prd-cp-2');
    expect([node.stage, node.etcdMember, node.etcdLearner]).toEqual(['running', true, false]);
    expect((op.data as { joinedMember?: { id: string } }).joinedMember?.id).toBe(node.etcdMemberId);
  }, 300_000);
});

describe('an estate that does not tie the configuration apply, with replaceConfigApply in the inventory', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ etcd: 'real', inventory: { extra: { production: { replaceConfigApply: true } } } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('names the configuration apply with -replace beside the VM, and the new node joins and votes', async () => {
    await h.sim.terraform.setLifecycle('production', CONFIG_APPLY, {});
    await h.sim.terraform.commit('the configuration apply no longer follows its VM');
    h.sim.failMachine('production', 'talos-prd-cp-2');
    await h.sim.etcdSettled('production');

    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');
    await clickStart(h, plan, USERS.alice);
    await approve(h, await waitForApprovalMatching(h, plan, /remove the etcd member of talos-prd-cp-2/, CHANNELS.production), USERS.carol);
    await approve(
      h,
      await waitForApprovalMatching(h, plan, /tofu apply: replace the VM of talos-prd-cp-2/, CHANNELS.production),
      USERS.carol,
    );
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.production, 240_000);

    expect(done.text).toContain('completed');
    expect(calls(h, 'tofu', 'production', 'plan').at(-1)?.argv).toContain(`-replace=${CONFIG_APPLY}["talos-prd-cp-2"]`);
    const op = await storedOperation(h, plan.opId);
    expect(op.steps.find((s) => s.kind === 'replace-plan')?.detail).toContain(
      `${CONFIG_APPLY}["talos-prd-cp-2"] (replace, named with -replace)`,
    );
    const node = h.sim.node('production', 'talos-prd-cp-2');
    expect([node.stage, node.etcdMember, node.etcdLearner]).toEqual(['running', true, false]);
  }, 300_000);
});

describe('a worker replacement', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ etcd: 'real' });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('asks before deleting the Node, and stops when the node answers again', async () => {
    // Arrange
    h.sim.failMachine('staging', 'talos-stg-w-1');
    const plan = await requestUpgrade(h, 'replace talos-stg-w-1', { channel: CHANNELS.staging });
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);

    // Act: the Node deletion waits for an approver; meanwhile the machine comes back.
    const ask = await waitForApprovalMatching(h, plan, /delete the Node of talos-stg-w-1/, CHANNELS.staging);
    const deletedBefore = kinds(h, 'staging', '10.0.20.205').includes('node-deleted');
    h.sim.restoreMachine('staging', 'talos-stg-w-1');
    await h.sim.waitFor(() => h.sim.node('staging', 'talos-stg-w-1').stage === 'running', 30_000, 'the worker running again');
    await approve(h, ask, USERS.carol, CHANNELS.staging);
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.staging, 120_000);

    // Assert
    expect(deletedBefore).toBe(false);
    expect(done.text).toContain('stopped');
    const op = await storedOperation(h, plan.opId);
    const failed = op.steps.find((s) => s.status === 'failed');
    expect(failed?.kind).toBe('delete-node');
    expect(failed?.detail).toContain('answers talosctl and its Node talos-stg-w-1 is Ready again');
    expect(failed?.detail).toContain('/talos remove 10.0.20.205');
    expect(kinds(h, 'staging', '10.0.20.205')).not.toContain('node-deleted');
    expect(calls(h, 'tofu', 'staging', 'apply')).toEqual([]);
    expect(await h.command(`cancel ${plan.opId}`, { channel: CHANNELS.staging })).toContain('is free for the next operation');
  }, 180_000);

  it('stops when the new node booted a stale ISO, naming what it runs and the ISO to fix', async () => {
    // Arrange: the ISO at the static file ID is an older build than the declared v1.11.6.
    h.sim.failMachine('staging', 'talos-stg-w-1');
    h.sim.faults.set('staging', { staleIso: { version: 'v1.11.5' } });
    const plan = await requestUpgrade(h, 'replace talos-stg-w-1', { channel: CHANNELS.staging });
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);

    // Act
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
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.staging, 240_000);

    // Assert
    expect(done.text).toContain('stopped');
    const op = await storedOperation(h, plan.opId);
    const failed = op.steps.find((s) => s.status === 'failed');
    expect(failed?.kind).toBe('node-join');
    expect(failed?.detail).toContain('it runs Talos v1.11.5, not the declared v1.11.6 (talos_version)');
    expect(failed?.detail).toContain('isos:iso/talos-nocloud-amd64.iso');
    expect(failed?.detail).toMatch(/https:\/\/factory\.talos\.dev\/image\/[0-9a-f]{64}\/v1\.11\.6\/nocloud-amd64\.iso/);
    expect(op.steps.find((s) => s.kind === 'replace-gate')?.status).toBe('pending');
  }, 300_000);
});

describe('a stored hostname edited in Redis', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ etcd: 'real' });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('is refused at the member removal, and the healthy member it names is not touched', async () => {
    // Arrange: the failed node's member was removed by hand already; the healthy talos-prd-cp-3 keeps its own.
    h.sim.failMachine('production', 'talos-prd-cp-2');
    await h.sim.etcdSettled('production');
    const dir = await mkdtemp(join(tmpdir(), 'replace-by-hand-'));
    await writeFile(join(dir, 'talosconfig'), h.sim.talosconfig('production'), { mode: 0o600 });
    const removed = await execa(
      h.sim.bin.talosctl,
      [
        '--talosconfig',
        join(dir, 'talosconfig'),
        '--nodes',
        '10.0.30.11',
        'etcd',
        'remove-member',
        h.sim.node('production', 'talos-prd-cp-2').etcdMemberId ?? '',
      ],
      { reject: false },
    );
    await rm(dir, { recursive: true, force: true });
    expect(removed.exitCode).toBe(0);
    const removalsByHand = calls(h, 'talosctl', 'production', 'etcd', 'remove-member').length;
    const healthy = h.sim.node('production', 'talos-prd-cp-3').etcdMemberId;
    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');
    await clickStart(h, plan, USERS.alice);
    const removal = await waitForApprovalMatching(h, plan, /remove the etcd member of talos-prd-cp-2/, CHANNELS.production);
    await waitForSettled(h);
    await tamperStoredOperation(h, plan.opId, (op) => {
      op.data = { ...op.data, hostname: 'talos-prd-cp-3' };
    });

    // Act
    await approve(h, removal, USERS.carol);
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.production, 120_000);

    // Assert
    expect(done.text).toContain('stopped');
    const op = await storedOperation(h, plan.opId);
    const failed = op.steps.find((s) => s.status === 'failed');
    expect(failed?.kind).toBe('remove-member');
    expect(failed?.detail).toContain('not talos-prd-cp-3 as this operation recorded');
    expect(calls(h, 'talosctl', 'production', 'etcd', 'remove-member')).toHaveLength(removalsByHand);
    expect(h.sim.events.filter((e) => e.kind === 'etcd-member-removed').map((e) => e.node)).toEqual(['10.0.30.12']);
    const cp3 = h.sim.node('production', 'talos-prd-cp-3');
    expect([cp3.etcdMember, cp3.etcdMemberId]).toEqual([true, healthy]);
    expect(kinds(h, 'production', '10.0.30.12')).not.toContain('node-deleted');
  }, 180_000);
});
