import { describe, expect, it } from 'vitest';
import { groupedChanges, planCounts } from '../../../src/chat/plan-report.ts';
import { OpsError } from '../../../src/errors.ts';
import { tofuDiagnostics, tofuErrorLines } from '../../../src/tofu/diagnostics.ts';
import { actionOf, parsePlanJson, reviewPlan } from '../../../src/tofu/parse-plan.ts';

const TALOS = 'registry.opentofu.org/siderolabs/talos';
const PROXMOX = 'registry.opentofu.org/bpg/proxmox';

function change(address: string, type: string, provider: string, actions: string[], extra: Record<string, unknown> = {}) {
  return {
    address,
    mode: 'managed',
    type,
    name: address.split('.')[1]?.split('[')[0] ?? 'this',
    provider_name: provider,
    change: {
      actions,
      before: { id: 'x' },
      after: { machine_secrets: 'SECRET-VALUE' },
      after_unknown: {},
      before_sensitive: {},
      after_sensitive: {},
    },
    ...extra,
  };
}

/** `tofu show -json <plan>` as OpenTofu 1.10 prints it, trimmed to the resource changes. */
function show(changes: unknown[]): string {
  return JSON.stringify({
    format_version: '1.0',
    terraform_version: '1.10.6',
    planned_values: { root_module: {} },
    resource_changes: changes,
    configuration: {},
    errored: false,
  });
}

describe('parsePlanJson', () => {
  it('reads format_version and the resource changes', () => {
    const plan = parsePlanJson(show([change('talos_machine_secrets.this', 'talos_machine_secrets', TALOS, ['no-op'])]));
    expect(plan.format_version).toBe('1.0');
    expect(plan.resource_changes?.map((c) => [c.address, c.change.actions])).toEqual([['talos_machine_secrets.this', ['no-op']]]);
  });

  it('accepts a plan of an empty configuration, which has no resource_changes', () => {
    expect(reviewPlan(parsePlanJson('{"format_version":"1.2","terraform_version":"1.10.6"}')).changes).toEqual([]);
  });

  it('refuses text that is not JSON with a stable code and no quote of the output', () => {
    const attempt = () => parsePlanJson('Error: SECRET-VALUE');
    expect(attempt).toThrow(OpsError);
    expect(attempt).toThrow('cannot parse tofu show -json output: it is not JSON');
    expect(() => attempt()).not.toThrow(/SECRET-VALUE/);
  });

  it('refuses a change without actions and names where', () => {
    const broken = JSON.stringify({
      format_version: '1.0',
      resource_changes: [{ address: 'a.b', type: 'a', change: { after: 'SECRET-VALUE' } }],
    });
    expect(() => parsePlanJson(broken)).toThrow(/unexpected shape at resource_changes\.0\.change\.actions/);
    expect(() => parsePlanJson(broken)).not.toThrow(/SECRET-VALUE/);
  });
});

describe('actionOf', () => {
  it.each([
    [['no-op'], 'no-op'],
    [['create'], 'create'],
    [['read'], 'read'],
    [['update'], 'update'],
    [['delete'], 'delete'],
    [['forget'], 'forget'],
    [['delete', 'create'], 'replace'],
    [['create', 'delete'], 'replace'],
    [['forget', 'create'], 'forget-replace'],
    [['update', 'delete'], 'unknown'],
    [['create', 'forget'], 'unknown'],
    [['Archive'], 'unknown'],
  ])('%j → %s', (actions, action) => {
    expect(actionOf(actions)).toBe(action);
  });
});

describe('reviewPlan', () => {
  it('drops no-ops, keeps plan order and counts each action', () => {
    const review = reviewPlan(
      parsePlanJson(
        show([
          change('talos_machine_secrets.this', 'talos_machine_secrets', TALOS, ['no-op']),
          change('talos_machine_configuration_apply.this["cp-1"]', 'talos_machine_configuration_apply', TALOS, ['update']),
          change('proxmox_virtual_environment_vm.talos["cp-4"]', 'proxmox_virtual_environment_vm', PROXMOX, ['create']),
          change('data.talos_client_configuration.this', 'talos_client_configuration', TALOS, ['read'], { mode: 'data' }),
        ]),
      ),
    );
    expect(review.changes.map((c) => [c.provider, c.action, c.address])).toEqual([
      ['Talos', 'update', 'talos_machine_configuration_apply.this["cp-1"]'],
      ['Proxmox', 'create', 'proxmox_virtual_environment_vm.talos["cp-4"]'],
      ['Talos', 'read', 'data.talos_client_configuration.this'],
    ]);
    expect(review.counts).toEqual({ create: 1, read: 1, update: 1, replace: 0, 'forget-replace': 0, delete: 0, forget: 0, unknown: 0 });
    expect(review.dangers).toEqual([]);
    expect(planCounts(review)).toBe('1 to add, 1 to change, 1 to read');
  });

  it.each([[['delete', 'create']], [['create', 'delete']]])('stops on a replacement of the cluster secrets (%j)', (actions) => {
    const review = reviewPlan(
      parsePlanJson(
        show([
          change('talos_machine_secrets.this', 'talos_machine_secrets', TALOS, actions, { action_reason: 'replace_because_cannot_update' }),
        ]),
      ),
    );
    expect(review.dangers).toEqual([
      {
        level: 'stop',
        address: 'talos_machine_secrets.this',
        action: 'replace',
        meaning: 'replaces the cluster secrets: a cluster migration, not maintenance: stop and do not apply',
      },
    ]);
    expect(review.changes[0]?.reason).toBe('replace_because_cannot_update');
  });

  it('stops on a deletion of the cluster secrets', () => {
    const review = reviewPlan(parsePlanJson(show([change('talos_machine_secrets.this', 'talos_machine_secrets', TALOS, ['delete'])])));
    expect(review.dangers.map((d) => [d.level, d.meaning.split(':')[0]])).toEqual([['stop', 'destroys the cluster secrets']]);
  });

  it('stops on a VM replacement and only cautions on a VM deletion', () => {
    const review = reviewPlan(
      parsePlanJson(
        show([
          change('proxmox_virtual_environment_vm.talos["cp-1"]', 'proxmox_virtual_environment_vm', PROXMOX, ['delete', 'create']),
          change('proxmox_virtual_environment_vm.talos["w-9"]', 'proxmox_virtual_environment_vm', PROXMOX, ['delete']),
          change('proxmox_virtual_environment_vm.talos["cp-2"]', 'proxmox_virtual_environment_vm', PROXMOX, ['update']),
        ]),
      ),
    );
    expect(review.dangers.map((d) => [d.level, d.address])).toEqual([
      ['stop', 'proxmox_virtual_environment_vm.talos["cp-1"]'],
      ['caution', 'proxmox_virtual_environment_vm.talos["w-9"]'],
    ]);
    expect(planCounts(review)).toBe('1 to replace, 1 to destroy, 1 to change');
  });

  it('does not flag a replacement of other resources', () => {
    const review = reviewPlan(
      parsePlanJson(
        show([change('talos_machine_configuration_apply.this["cp-1"]', 'talos_machine_configuration_apply', TALOS, ['delete', 'create'])]),
      ),
    );
    expect(review.dangers).toEqual([]);
  });
});

describe('the actions of OpenTofu 1.12 (jsonplan actionString)', () => {
  /** A `tofu show -json` as the simulator records OpenTofu 1.12.6 writing it, sensitive values in plain text. */
  const recorded = (address: string, type: string, provider: string, actions: string[], reason = 'replace_because_cannot_update') =>
    JSON.stringify({
      format_version: '1.2',
      terraform_version: '1.12.6',
      resource_changes: [
        {
          address,
          mode: 'managed',
          type,
          name: 'this',
          provider_name: provider,
          change: {
            actions,
            before: { generation: 1, id: 'machine_secrets', machine_secrets: 'SECRET-VALUE', client_configuration: 'SECRET-CA' },
            after: { generation: 2 },
            after_unknown: { id: true, machine_secrets: true, client_configuration: true },
            before_sensitive: { client_configuration: true, machine_secrets: true },
            after_sensitive: { client_configuration: true, machine_secrets: true },
          },
          action_reason: reason,
        },
      ],
      output_changes: {
        talosconfig: {
          actions: ['no-op'],
          before: 'SECRET-CONFIG',
          after: 'SECRET-CONFIG',
          after_unknown: false,
          before_sensitive: true,
          after_sensitive: true,
        },
      },
    });

  it('stops on a forget-and-create of the cluster secrets, as on a replacement', () => {
    const review = reviewPlan(parsePlanJson(recorded('talos_machine_secrets.this', 'talos_machine_secrets', TALOS, ['forget', 'create'])));
    expect(review.dangers).toEqual([
      expect.objectContaining({ level: 'stop', address: 'talos_machine_secrets.this', action: 'forget-replace' }),
    ]);
    expect(review.dangers[0]?.meaning).toContain('a cluster migration, not maintenance');
    expect(planCounts(review)).toBe('1 to forget and create again');
    expect(groupedChanges(review)).toEqual([
      'Talos',
      './+ forget-replace talos_machine_secrets.this (replace_because_cannot_update) 🟥 DANGER',
    ]);
  });

  it('stops on a forget-and-create of a VM, which leaves the old one running', () => {
    const review = reviewPlan(
      parsePlanJson(
        recorded('proxmox_virtual_environment_vm.talos["cp-1"]', 'proxmox_virtual_environment_vm', PROXMOX, ['forget', 'create']),
      ),
    );
    expect(review.dangers.map((d) => [d.level, d.action])).toEqual([['stop', 'forget-replace']]);
    expect(review.dangers[0]?.meaning).toContain('the old one keeps running');
  });

  it("stops on forgetting the cluster secrets, a node's VM or a Talos resource: each leaves Terraform's ownership", () => {
    const secrets = reviewPlan(
      parsePlanJson(
        recorded('talos_machine_secrets.this', 'talos_machine_secrets', TALOS, ['forget'], 'forgot_because_lifecycle_destroy_in_config'),
      ),
    );
    const vm = reviewPlan(
      parsePlanJson(
        recorded(
          'proxmox_virtual_environment_vm.talos["w-9"]',
          'proxmox_virtual_environment_vm',
          PROXMOX,
          ['forget'],
          'forgot_because_lifecycle_destroy_in_config',
        ),
      ),
    );
    const apply = reviewPlan(
      parsePlanJson(
        recorded(
          'talos_machine_configuration_apply.this["w-9"]',
          'talos_machine_configuration_apply',
          TALOS,
          ['forget'],
          'forgot_because_lifecycle_destroy_in_config',
        ),
      ),
    );
    expect(secrets.dangers.map((d) => [d.level, d.action])).toEqual([['stop', 'forget']]);
    expect(vm.dangers.map((d) => [d.level, d.action, d.address])).toEqual([
      ['stop', 'forget', 'proxmox_virtual_environment_vm.talos["w-9"]'],
    ]);
    expect(vm.dangers[0]?.meaning).toMatch(/outside Terraform's ownership/);
    expect(apply.dangers.map((d) => [d.level, d.action])).toEqual([['stop', 'forget']]);
  });

  it('stops on an action it does not recognise, naming the resource and the action', () => {
    const review = reviewPlan(
      parsePlanJson(recorded('talos_machine_configuration_apply.this["cp-1"]', 'talos_machine_configuration_apply', TALOS, ['Archive'])),
    );
    expect(review.dangers).toEqual([
      expect.objectContaining({ level: 'stop', address: 'talos_machine_configuration_apply.this["cp-1"]', action: 'unknown' }),
    ]);
    expect(review.dangers[0]?.meaning).toContain('["Archive"], which the bot does not recognise');
    expect(groupedChanges(review)[1]).toContain('Archive');
  });

  it('keeps no sensitive value of the plan in what it returns', () => {
    const review = reviewPlan(parsePlanJson(recorded('talos_machine_secrets.this', 'talos_machine_secrets', TALOS, ['forget', 'create'])));
    expect(JSON.stringify(review)).not.toMatch(/SECRET/);
  });

  it('refuses a plan in a JSON format of another major version', () => {
    expect(() => parsePlanJson('{"format_version":"2.0","resource_changes":[]}')).toThrow(/format_version "2.0" is not 1.x/);
  });
});

describe('groupedChanges', () => {
  it('puts Talos, then Proxmox, then other providers, most destructive first, and marks dangers', () => {
    const review = reviewPlan(
      parsePlanJson(
        show([
          change('random_id.suffix', 'random_id', 'registry.opentofu.org/hashicorp/random', ['create']),
          change('proxmox_virtual_environment_vm.talos["cp-1"]', 'proxmox_virtual_environment_vm', PROXMOX, ['create', 'delete']),
          change('talos_machine_configuration_apply.this["cp-1"]', 'talos_machine_configuration_apply', TALOS, ['update']),
          change('talos_machine_secrets.this', 'talos_machine_secrets', TALOS, ['delete', 'create']),
        ]),
      ),
    );
    expect(groupedChanges(review)).toEqual([
      'Talos',
      '-/+ replace  talos_machine_secrets.this 🟥 DANGER',
      '  ~ update   talos_machine_configuration_apply.this["cp-1"]',
      'Proxmox',
      '+/- replace  proxmox_virtual_environment_vm.talos["cp-1"] 🟥 DANGER',
      'random',
      '  + create   random_id.suffix',
    ]);
  });
});

describe('tofuDiagnostics', () => {
  it('reads boxed diagnostics', () => {
    const stderr =
      '╷\n│ Error: Error acquiring the state lock\n│ \n│ Error message: ConditionalCheckFailedException: The conditional request failed\n│ Lock Info:\n│   ID:        3f1c\n╵\n';
    expect(tofuDiagnostics(stderr)).toEqual([
      {
        severity: 'Error',
        summary: 'Error acquiring the state lock',
        detail: ['Error message: ConditionalCheckFailedException: The conditional request failed', 'Lock Info:', 'ID:        3f1c'],
      },
    ]);
  });

  it('reads plain diagnostics and keeps warnings apart from errors', () => {
    const stderr =
      '\nWarning: Deprecated attribute\n\n  on main.tf line 3\n\nError: Unsupported argument\n\n  on nodes.tf line 12, in resource "x" "y":\n';
    expect(tofuDiagnostics(stderr).map((d) => [d.severity, d.summary])).toEqual([
      ['Warning', 'Deprecated attribute'],
      ['Error', 'Unsupported argument'],
    ]);
    expect(tofuErrorLines(stderr)).toEqual(['Error: Unsupported argument', '  on nodes.tf line 12, in resource "x" "y":']);
  });

  it('falls back to the last lines when tofu printed no diagnostic', () => {
    expect(tofuErrorLines('', 'line 1\nline 2\n')).toEqual(['line 1', 'line 2']);
  });
});

describe('a VM change and stop_on_destroy', () => {
  it('reads only that boolean from before: absent or false is a graceful shutdown, true a stop', () => {
    const vm = (address: string, before: Record<string, unknown>) => ({
      ...change(address, 'proxmox_virtual_environment_vm', PROXMOX, ['delete', 'create']),
      change: { actions: ['delete', 'create'], before },
    });
    const review = reviewPlan(
      parsePlanJson(
        show([
          vm('proxmox_virtual_environment_vm.talos["a"]', { id: '101' }),
          vm('proxmox_virtual_environment_vm.talos["b"]', { id: '102', stop_on_destroy: true }),
        ]),
      ),
    );
    expect(review.changes.map((c) => [c.key, c.stopOnDestroy])).toEqual([
      ['a', false],
      ['b', true],
    ]);
  });
});
