import { describe, expect, it } from 'vitest';
import { judgeTerraformChange, type ChangeFacts } from '../../../src/rules/terraform-change.ts';
import { parsePlanJson, reviewPlan, vmKeys } from '../../../src/tofu/parse-plan.ts';
import { judgeDeclared } from '../../../src/health/rules/declared-judgement.ts';
import type { PlanOutcome } from '../../../src/tofu/run-plan.ts';

const TALOS = 'registry.opentofu.org/siderolabs/talos';
const PROXMOX = 'registry.opentofu.org/bpg/proxmox';

function rc(address: string, type: string, provider: string, actions: string[], index?: string) {
  return {
    address,
    mode: 'managed',
    type,
    name: 'this',
    ...(index ? { index } : {}),
    provider_name: provider,
    change: { actions, before: {}, after: {} },
  };
}

/** `tofu show -json` of a plan with these changes and output changes, as OpenTofu prints it. */
function outcome(changes: unknown[], outputChanges: Record<string, unknown> = {}): PlanOutcome {
  const review = reviewPlan(
    parsePlanJson(JSON.stringify({ format_version: '1.2', resource_changes: changes, output_changes: outputChanges })),
  );
  return { fmt: { status: 'formatted' }, validate: { status: 'valid' }, plan: { status: 'planned', review } };
}

const update = rc('talos_machine_configuration_apply.this["cp-1"]', 'talos_machine_configuration_apply', TALOS, ['update'], 'cp-1');

function facts(overrides: Partial<ChangeFacts>): ChangeFacts {
  return {
    cluster: 'production',
    outcome: outcome([update]),
    tree: { commit: 'a'.repeat(40), uncommitted: [] },
    removals: [],
    declared: [],
    ...overrides,
  };
}

describe('judgeTerraformChange', () => {
  it('offers a formatted, valid, committed patch change for apply', () => {
    expect(judgeTerraformChange(facts({}))).toEqual({ refusals: [], notes: [] });
  });

  it('never offers a plan from a tree holding ignored files tofu reads, and names them', () => {
    const { refusals } = judgeTerraformChange(
      facts({ tree: { commit: 'a'.repeat(40), uncommitted: [], ignoredInputs: ['production/secrets.auto.tfvars'] } }),
    );
    expect(refusals).toEqual([expect.stringContaining('files git ignores that tofu reads all the same (production/secrets.auto.tfvars)')]);
  });

  it('never offers a plan from a tree with uncommitted changes, and names the files', () => {
    const { refusals } = judgeTerraformChange(
      facts({ tree: { commit: 'a'.repeat(40), uncommitted: ['production/cluster.auto.tfvars.json'] } }),
    );
    expect(refusals).toEqual([expect.stringContaining('uncommitted changes (production/cluster.auto.tfvars.json)')]);
  });

  it('never offers a plan from a directory that is not a git checkout, or when git cannot tell', () => {
    expect(
      judgeTerraformChange(facts({ tree: { commit: undefined, uncommitted: undefined, unknownBecause: '/tf is not a git checkout' } }))
        .refusals,
    ).toEqual([expect.stringContaining('/tf is not a git checkout: only a committed change can be applied')]);
    expect(
      judgeTerraformChange(facts({ tree: { commit: 'b'.repeat(40), uncommitted: undefined, unknownBecause: 'git status could not run' } }))
        .refusals[0],
    ).toContain('unknown');
  });

  it('refuses a replacement of the cluster secrets or of a VM, and a plan that changes nothing', () => {
    const secrets = judgeTerraformChange(
      facts({ outcome: outcome([rc('talos_machine_secrets.this', 'talos_machine_secrets', TALOS, ['delete', 'create'])]) }),
    );
    expect(secrets.refusals).toEqual([expect.stringContaining('cluster migration')]);
    const vm = judgeTerraformChange(
      facts({
        outcome: outcome([
          rc('proxmox_virtual_environment_vm.talos["cp-1"]', 'proxmox_virtual_environment_vm', PROXMOX, ['delete', 'create'], 'cp-1'),
        ]),
      }),
    );
    expect(vm.refusals).toEqual([expect.stringContaining('replaces a Talos VM')]);
    expect(judgeTerraformChange(facts({ outcome: outcome([]) })).refusals).toEqual([expect.stringContaining('nothing to apply')]);
  });

  it('refuses a forget-and-create of the cluster secrets or of a VM, and any action it does not recognise, naming resource and action', () => {
    const secrets = judgeTerraformChange(
      facts({ outcome: outcome([rc('talos_machine_secrets.this', 'talos_machine_secrets', TALOS, ['forget', 'create'])]) }),
    );
    expect(secrets.refusals).toEqual([
      expect.stringMatching(/^`talos_machine_secrets\.this` forgets the cluster secrets .*cluster migration/),
    ]);
    const vm = judgeTerraformChange(
      facts({
        outcome: outcome([
          rc('proxmox_virtual_environment_vm.talos["cp-1"]', 'proxmox_virtual_environment_vm', PROXMOX, ['forget', 'create'], 'cp-1'),
        ]),
      }),
    );
    expect(vm.refusals).toEqual([expect.stringContaining('replaces a Talos VM under `lifecycle.destroy = false`')]);
    const unknown = judgeTerraformChange(
      facts({ outcome: outcome([update, rc('talos_cluster_kubeconfig.this', 'talos_cluster_kubeconfig', TALOS, ['Archive'])]) }),
    );
    expect(unknown.refusals).toEqual([
      expect.stringMatching(/^`talos_cluster_kubeconfig\.this` has the action \["Archive"\], which the bot does not recognise/),
    ]);
  });

  it('applies a create-before-destroy replacement of another resource, and refuses one of a VM', () => {
    expect(
      judgeTerraformChange(
        facts({
          outcome: outcome([rc('talos_image_factory_schematic.this', 'talos_image_factory_schematic', TALOS, ['create', 'delete'])]),
        }),
      ).refusals,
    ).toEqual([]);
    const vm = judgeTerraformChange(
      facts({
        outcome: outcome([
          rc('proxmox_virtual_environment_vm.talos["cp-1"]', 'proxmox_virtual_environment_vm', PROXMOX, ['create', 'delete'], 'cp-1'),
        ]),
      }),
    );
    expect(vm.refusals).toEqual([expect.stringContaining('replaces a Talos VM')]);
  });

  it("labels the deletion of a removed node's VM as its follow-up, and refuses one nobody removed", () => {
    const deleteVm = rc('proxmox_virtual_environment_vm.talos["w-2"]', 'proxmox_virtual_environment_vm', PROXMOX, ['delete'], 'w-2');
    const removed = judgeTerraformChange(facts({ outcome: outcome([deleteVm]), removals: [{ op: 'op-remove1', nodeName: 'w-2' }] }));
    expect(removed).toEqual({ refusals: [], notes: ['Destroying the VM of w-2 is the expected follow-up of its removal op-remove1.'] });
    const stray = judgeTerraformChange(facts({ outcome: outcome([deleteVm]), removals: [{ op: 'op-remove1', nodeName: 'w-3' }] }));
    expect(stray.refusals).toEqual([expect.stringContaining('no `/talos remove` of production reset and drained')]);
  });

  it('applies a plan only while every node runs the declared versions, refuses one below what runs, and names its upgrade', () => {
    const variables = { talos_version: { value: 'v1.11.6' }, talos_kubernetes_version: { value: 'v1.34.1' } };
    const review = reviewPlan(parsePlanJson(JSON.stringify({ format_version: '1.2', resource_changes: [update], variables })));
    const running = (talos: [string, string | { unknown: string }][], kubernetes: [string, string][] = [['cp-1', 'v1.34.1']]) =>
      judgeDeclared(review.declared, { talos: new Map(talos), kubernetes: new Map(kubernetes) });
    const behind = judgeTerraformChange(
      facts({
        declared: running([
          ['10.0.30.11', 'v1.11.6'],
          ['10.0.30.12', 'v1.11.5'],
        ]),
      }),
    );
    expect(behind.refusals).toEqual([
      expect.stringMatching(/Apply only after every node already runs the declared Talos version \(10\.0\.30\.12 runs v1\.11\.5\)/i),
    ]);
    expect(behind.refusals[0]).toContain(
      '`/talos upgrade talos v1.11.6` upgrades the rest, and continues an upgrade to it that stopped half-way',
    );
    const unknown = judgeTerraformChange(facts({ declared: running([['10.0.30.11', { unknown: 'connection refused' }]]) }));
    expect(unknown.refusals[0]).toContain('10.0.30.11: connection refused');
    // A routine change that leaves the declared version as the state declares it is not held up by a node that does not answer.
    const routine = judgeTerraformChange(
      facts({
        declared: running([['10.0.30.11', { unknown: 'connection refused' }]]),
        stateDeclared: { talos: 'v1.11.6', kubernetes: 'v1.34.1' },
      }),
    );
    expect(routine).toEqual({
      refusals: [],
      notes: [expect.stringContaining('Whether every node runs the declared Talos v1.11.6 is unknown (10.0.30.11: connection refused)')],
    });
    const lower = judgeTerraformChange(facts({ declared: running([['10.0.30.11', 'v1.11.6']], [['cp-1', 'v1.35.0']]) }));
    expect(lower.refusals).toEqual([
      'the plan declares Kubernetes v1.34.1 (variable talos_kubernetes_version), below what runs (cp-1 runs v1.35.0): applying it would take Kubernetes back. ' +
        'Make the Terraform change `talos_kubernetes_version = "v1.35.0"`, commit it, and run `/talos plan` again',
    ]);
    const done = judgeTerraformChange(
      facts({
        declared: running([['10.0.30.11', 'v1.11.6']]),
        stateDeclared: { talos: 'v1.11.5', kubernetes: 'v1.34.1' },
        upgrades: { talos: { op: 'op-upg1', version: 'v1.11.6' } },
      }),
    );
    expect(done).toEqual({ refusals: [], notes: [expect.stringContaining('Terraform follow-up of the Talos upgrade op-upg1')] });
  });

  it('says which rule is off when the plan declares no version the bot can read', () => {
    const review = reviewPlan(parsePlanJson(JSON.stringify({ format_version: '1.2', resource_changes: [update] })));
    const off = judgeTerraformChange(
      facts({
        declared: judgeDeclared(review.declared, { talos: new Map([['cp-1', 'v1.11.6']]), kubernetes: new Map([['cp-1', 'v1.34.1']]) }),
      }),
    );
    expect(off.refusals).toEqual([]);
    expect(off.notes).toEqual([
      expect.stringContaining(
        '"apply only after every node runs the declared Talos version" is off for this plan: the plan has no variable talos_version and no output talos_version',
      ),
      expect.stringContaining('declared Kubernetes version" is off for this plan: the plan has no variable talos_kubernetes_version'),
    ]);
  });

  it('never reads a sensitive output', () => {
    const sensitive = outcome([update], { talos_version: { actions: ['update'], before: 'x', after: 'y', after_sensitive: true } });
    expect(sensitive.plan.status === 'planned' && sensitive.plan.review.talosVersion).toBe(undefined);
  });

  it('refuses a new node while etcd has not settled after the last one, and more than one node per change', () => {
    const add = (h: string) => rc(`proxmox_virtual_environment_vm.talos["${h}"]`, 'proxmox_virtual_environment_vm', PROXMOX, ['create'], h);
    const one = outcome([add('cp-4')]);
    expect(one.plan.status === 'planned' && vmKeys(one.plan.review, 'create')).toEqual(['cp-4']);
    const unsettled = judgeTerraformChange(
      facts({ outcome: one, etcdSettled: { ok: false, evidence: ['cp-4 is still a learner, not a voting member'] } }),
    );
    expect(unsettled.refusals).toEqual([
      expect.stringContaining('Before you add another node, wait for all members to report the same leader'),
    ]);
    expect(judgeTerraformChange(facts({ outcome: one, etcdSettled: { ok: true, evidence: [] } })).refusals).toEqual([]);
    expect(
      judgeTerraformChange(facts({ outcome: outcome([add('cp-4'), add('cp-5')]), etcdSettled: { ok: true, evidence: [] } })).refusals,
    ).toEqual([expect.stringContaining('add one node per change')]);
  });

  it('refuses an unformatted or invalid configuration, and a plan that failed', () => {
    const base = outcome([update]);
    expect(judgeTerraformChange(facts({ outcome: { ...base, fmt: { status: 'unformatted', files: ['main.tf'] } } })).refusals[0]).toContain(
      'tofu fmt',
    );
    const invalid: PlanOutcome = {
      fmt: { status: 'formatted' },
      validate: { status: 'invalid', lines: ['Error: Unsupported argument'] },
      plan: { status: 'skipped', because: 'the configuration is not valid' },
    };
    expect(judgeTerraformChange(facts({ outcome: invalid })).refusals).toEqual([
      expect.stringContaining('Unsupported argument'),
      expect.stringContaining('did not run'),
    ]);
  });
});
