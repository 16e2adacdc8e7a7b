import { describe, expect, it } from 'vitest';
import { judgeReplacePlan } from '../../../src/rules/replace-plan.ts';
import { reviewPlan, parsePlanJson } from '../../../src/tofu/parse-plan.ts';

const VM = 'proxmox_virtual_environment_vm.talos["talos-prd-cp-2"]';
const APPLY = 'talos_machine_configuration_apply.this["talos-prd-cp-2"]';

function change(address: string, type: string, actions: string[], reason?: string, before?: Record<string, unknown>) {
  const key = /\["([^"]+)"\]$/.exec(address)?.[1];
  return {
    address,
    mode: 'managed',
    type,
    provider_name: type.startsWith('talos') ? 'registry.opentofu.org/siderolabs/talos' : 'registry.opentofu.org/bpg/proxmox',
    change: { actions, ...(before ? { before } : {}) },
    ...(reason ? { action_reason: reason } : {}),
    ...(key ? { index: key } : {}),
  };
}

/** `tofu show -json` of a plan with these resource changes (and outputs). */
function review(changes: unknown[], outputs: Record<string, unknown> = {}) {
  return reviewPlan(parsePlanJson(JSON.stringify({ format_version: '1.2', resource_changes: changes, output_changes: outputs })));
}

const vmReplaced = change(VM, 'proxmox_virtual_environment_vm', ['delete', 'create'], 'replace_by_request');
const applyFollows = change(APPLY, 'talos_machine_configuration_apply', ['delete', 'create'], 'replace_by_triggers');

describe('judgeReplacePlan', () => {
  it('accepts exactly the VM and its configuration apply replaced by triggers, and allows those replacements', () => {
    const judged = judgeReplacePlan(review([vmReplaced, applyFollows]), VM, 'talos-prd-cp-2');
    expect(judged.refusals).toEqual([]);
    expect(judged.allowed).toEqual([VM, APPLY]);
    expect(judged.notes[0]).toBe(`the new VM is configured by ${APPLY} (replace, tied to the VM by replace_triggered_by)`);
  });

  it('accepts a create-before-destroy replacement of the VM', () => {
    expect(
      judgeReplacePlan(review([change(VM, 'proxmox_virtual_environment_vm', ['create', 'delete']), applyFollows]), VM, 'talos-prd-cp-2')
        .refusals,
    ).toEqual([]);
  });

  it('refuses a VM replaced alone: nothing would configure the new machine, and says the two fixes', () => {
    const judged = judgeReplacePlan(review([vmReplaced]), VM, 'talos-prd-cp-2', { address: APPLY, requested: false });
    expect(judged.refusals).toHaveLength(1);
    expect(judged.refusals[0]).toContain(`nothing in the plan configures the new VM: ${APPLY} is created or replaced with it`);
    expect(judged.refusals[0]).toContain('replace_triggered_by = [proxmox_virtual_environment_vm.talos[each.key]]');
    expect(judged.refusals[0]).toContain('`replaceConfigApply: true`');
  });

  it('accepts the configuration apply replaced by request only when the bot asked for it, or created', () => {
    const requested = change(APPLY, 'talos_machine_configuration_apply', ['delete', 'create'], 'replace_by_request');
    const created = change(APPLY, 'talos_machine_configuration_apply', ['create']);
    expect(judgeReplacePlan(review([vmReplaced, requested]), VM, 'talos-prd-cp-2', { address: APPLY, requested: true }).refusals).toEqual(
      [],
    );
    expect(
      judgeReplacePlan(review([vmReplaced, requested]), VM, 'talos-prd-cp-2', { address: APPLY, requested: false }).refusals,
    ).toHaveLength(2);
    expect(judgeReplacePlan(review([vmReplaced, created]), VM, 'talos-prd-cp-2').refusals).toEqual([]);
  });

  it('says when the destroy waits for a graceful shutdown, unless the VM sets stop_on_destroy', () => {
    const graceful = change(VM, 'proxmox_virtual_environment_vm', ['delete', 'create'], 'replace_by_request', { stop_on_destroy: false });
    const stopped = change(VM, 'proxmox_virtual_environment_vm', ['delete', 'create'], 'replace_by_request', { stop_on_destroy: true });
    const slow = judgeReplacePlan(review([graceful, applyFollows]), VM, 'talos-prd-cp-2');
    const fast = judgeReplacePlan(review([stopped, applyFollows]), VM, 'talos-prd-cp-2');
    expect([slow.gracefulShutdown, fast.gracefulShutdown]).toEqual([true, false]);
    expect(slow.notes.join()).toContain('does not set stop_on_destroy');
    expect(fast.notes.join()).not.toContain('stop_on_destroy');
  });

  it('refuses a plan with any other change, naming each', () => {
    const other = change('proxmox_virtual_environment_vm.talos["talos-prd-cp-3"]', 'proxmox_virtual_environment_vm', ['update']);
    const secrets = change('talos_machine_secrets.this', 'talos_machine_secrets', ['delete', 'create']);
    const judged = judgeReplacePlan(review([vmReplaced, applyFollows, other, secrets]), VM, 'talos-prd-cp-2');
    expect(judged.refusals).toHaveLength(1);
    expect(judged.refusals[0]).toContain('proxmox_virtual_environment_vm.talos["talos-prd-cp-3"] (update)');
    expect(judged.refusals[0]).toContain('talos_machine_secrets.this (replace)');
  });

  it('refuses a resource of the same node replaced for another reason than the VM', () => {
    const own = change(APPLY, 'talos_machine_configuration_apply', ['delete', 'create'], 'replace_because_cannot_update');
    const refusals = judgeReplacePlan(review([vmReplaced, own]), VM, 'talos-prd-cp-2').refusals;
    expect(refusals).toHaveLength(2);
    expect(refusals[1]).toContain(`${APPLY} (replace, replace_because_cannot_update)`);
  });

  it('refuses a plan that does not replace the VM, or forgets it instead of destroying it', () => {
    expect(judgeReplacePlan(review([]), VM, 'talos-prd-cp-2').refusals).toEqual([
      `the plan does not replace ${VM}: it has no change for it`,
    ]);
    const forget = judgeReplacePlan(review([change(VM, 'proxmox_virtual_environment_vm', ['forget', 'create'])]), VM, 'talos-prd-cp-2');
    expect(forget.refusals[0]).toContain('forget-replace');
    expect(forget.allowed).toEqual([]);
  });

  it('notes an output that moves without refusing', () => {
    const judged = judgeReplacePlan(
      review([vmReplaced, applyFollows], { talos_version: { actions: ['update'], before: 'v1.12.1', after: 'v1.12.2' } }),
      VM,
      'talos-prd-cp-2',
    );
    expect(judged.refusals).toEqual([]);
    expect(judged.notes.join()).toContain('talos_version moves v1.12.1 → v1.12.2');
  });
});
