import { describe, expect, it } from 'vitest';
import { groupedChanges, planCounts, planEffectLines } from '../../../src/chat/plan-report.ts';
import { planEffect } from '../../../src/rules/plan-effect.ts';
import { OpsError } from '../../../src/errors.ts';
import { tofuDiagnostics, tofuErrorLines } from '../../../src/tofu/diagnostics.ts';
import { actionOf, attributeChanges, parsePlanJson, reviewPlan } from '../../../src/tofu/parse-plan.ts';

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
      after: { id: 'x', machine_secrets: 'SECRET-VALUE' },
      after_unknown: {},
      before_sensitive: {},
      // As tofu marks a schema's sensitive attribute (jsonplan `marshalResourceChange`, v1.12.6).
      after_sensitive: { machine_secrets: true },
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
      '      ~ client_configuration: (sensitive value)',
      '      ~ generation: 1 → 2',
      '      ~ machine_secrets: (sensitive value)',
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
      '      ~ machine_secrets: (sensitive value)',
      '  ~ update   talos_machine_configuration_apply.this["cp-1"]',
      '      ~ machine_secrets: (sensitive value)',
      'Proxmox',
      '+/- replace  proxmox_virtual_environment_vm.talos["cp-1"] 🟥 DANGER',
      '      ~ machine_secrets: (sensitive value)',
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

describe('attributeChanges', () => {
  it('names each changed attribute with its values, a sensitive one without any, and marks what forces the replacement', () => {
    // As OpenTofu 1.12.6 writes a replacement (jsonplan `marshalResourceChange`): values in plain text, sensitivity as marks beside them.
    const changes = attributeChanges({
      before: { generation: 1, id: 'machine_secrets', machine_secrets: 'SECRET-VALUE', node: '10.0.20.204', patches: ['a'] },
      after: { generation: 2, node: '10.0.20.204', patches: ['a', 'b'] },
      after_unknown: { id: true, machine_secrets: true },
      before_sensitive: { machine_secrets: true, patches: [false] },
      after_sensitive: { machine_secrets: true, patches: [false, true] },
      replace_paths: [['generation']],
    });

    expect(changes).toEqual([
      { name: 'generation', sensitive: false, before: '1', after: '2', forcesReplacement: true },
      { name: 'machine_secrets', sensitive: true },
      { name: 'patches', sensitive: true },
    ]);
    expect(JSON.stringify(changes)).not.toContain('SECRET');
  });

  it('blanks every attribute of a resource marked sensitive as a whole, and cuts a long value', () => {
    expect(attributeChanges({ before: { a: 1 }, after: { a: 2 }, after_sensitive: true })).toEqual([{ name: 'a', sensitive: true }]);
    const [long] = attributeChanges({ before: { a: 'x' }, after: { a: 'y'.repeat(200) } });
    expect(long?.after).toHaveLength(60);
    expect(long?.after?.endsWith('…')).toBe(true);
  });
});

describe('planEffectLines', () => {
  const update = (key: string, applyMode?: string) =>
    change(`talos_machine_configuration_apply.this["${key}"]`, 'talos_machine_configuration_apply', TALOS, ['update'], {
      index: key,
      ...(applyMode === undefined ? {} : { change: { actions: ['update'], before: {}, after: { apply_mode: applyMode } } }),
    });
  const production = {
    controlPlanes: ['10.0.30.11', '10.0.30.12', '10.0.30.13'],
    workers: ['10.0.30.21'],
    nodeNames: { '10.0.30.11': 'cp-1', '10.0.30.12': 'cp-2', '10.0.30.13': 'cp-3', '10.0.30.21': 'w-1' },
  };

  it('says a configuration goes to every control plane at once and may reboot them, the risk first', () => {
    const review = reviewPlan(parsePlanJson(show([update('cp-1'), update('cp-2'), update('cp-3'), update('w-1')])));
    expect(planEffectLines(planEffect(review, production))).toEqual([
      '⚠ All 3 control planes at once: if they reboot together, etcd loses quorum and the Kubernetes API is down until they are back',
      'applies configuration to 3 control planes at once (cp-1, cp-2, cp-3); may reboot them',
      'applies configuration to 1 worker (w-1); may reboot it',
    ]);
  });

  it("leads with the only control plane's outage, and says no reboot where the apply mode forbids one", () => {
    const staging = { controlPlanes: ['10.0.20.204'], workers: [], nodeNames: { '10.0.20.204': 'talos-stg-cp-1' } };
    const rebooting = reviewPlan(parsePlanJson(show([update('talos-stg-cp-1')])));
    const calm = reviewPlan(parsePlanJson(show([update('talos-stg-cp-1', 'no_reboot')])));
    expect(planEffectLines(planEffect(rebooting, staging))[0]).toBe(
      '⚠ Only control plane: the Kubernetes API and etcd are down while talos-stg-cp-1 reboots',
    );
    expect(planEffectLines(planEffect(calm, staging))).toEqual([
      'applies configuration to 1 control plane (talos-stg-cp-1); without a reboot',
    ]);
  });
});
