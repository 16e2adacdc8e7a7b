import { describe, expect, it } from 'vitest';
import type { Playbook, PlaybookCommand } from '../../../../jobs/engine/playbook.ts';
import { PLAYBOOK_COMMANDS, PLAYBOOKS, type EngineKind } from '../../../../jobs/playbooks/index.ts';
import { helpText, parseCommand, usage } from '../../../../handlers/parse-command.ts';
import { Operation } from '../../../../src/ops/operation.ts';

describe('the playbook registry', () => {
  it('is a complete record: a kind without its playbook fails the type check', () => {
    // Arrange
    const { 'node-remove': _removed, ...missingOne } = PLAYBOOKS;

    // Act
    // @ts-expect-error node-remove has no playbook, so this is no registry
    const incomplete: Record<EngineKind, Playbook> = missingOne;

    // Assert
    expect(Object.keys(incomplete)).not.toContain('node-remove');
    expect(Object.keys(PLAYBOOKS).sort()).toEqual([
      'etcd-restore',
      'k8s-upgrade',
      'node-remove',
      'node-replace',
      'node-rollback',
      'snapshot',
      'talos-upgrade',
      'terraform-apply',
    ]);
  });

  it('declares which playbooks hold the cluster: all but the snapshot, which changes nothing in it', () => {
    // Act
    const lockless = (Object.keys(PLAYBOOKS) as EngineKind[]).filter((kind) => PLAYBOOKS[kind].lock === 'none');

    // Assert
    expect(lockless).toEqual(['snapshot']);
    expect(PLAYBOOKS.snapshot).toMatchObject({ start: 'run', heldByWindows: false, startedBy: 'operators', texts: { reviewItems: [] } });
  });

  it('refuses, in the preflight of every playbook that takes an etcd snapshot, a bot that runs on the cluster', () => {
    // Act
    const checked = (Object.keys(PLAYBOOKS) as EngineKind[]).filter((kind) => PLAYBOOKS[kind].checks.snapshotOffCluster === true);

    // Assert: rollbacks and removals take no snapshot.
    expect(checked.sort()).toEqual(['etcd-restore', 'k8s-upgrade', 'node-replace', 'snapshot', 'talos-upgrade', 'terraform-apply']);
  });

  it('declares one command per playbook, each listed in the help', () => {
    // Act
    const names = PLAYBOOK_COMMANDS.map((c) => c.name);

    // Assert
    expect(names).toEqual([
      'terraform-apply',
      'snapshot',
      'talos-upgrade',
      'k8s-upgrade',
      'node-rollback',
      'node-remove',
      'node-replace',
      'etcd-restore',
    ]);
    for (const kind of Object.keys(PLAYBOOKS) as EngineKind[]) expect(names).toContain(PLAYBOOKS[kind].command.name);
  });
});

describe('operation kinds are names, not a list the stored operation keeps', () => {
  const stored = (kind: string, stepKind = 'upgrade-worker') =>
    Operation.safeParse({
      id: 'op-1a2b3c4d5e',
      kind,
      cluster: 'staging',
      channel: 'C0MAINTSTG',
      requestedBy: 'U0ALICE',
      createdAt: '2026-12-01T10:00:00.000Z',
      state: 'planned',
      revision: 1,
      steps: [{ id: 's1', kind: stepKind, status: 'pending' }],
    });

  it('stores a kind no playbook runs yet, as long as it is spelled as a kind', () => {
    // Assert
    expect(stored('cluster-reboot', 'reboot-node').success).toBe(true);
    expect(stored('k8s-upgrade', 'k8s-dry-run').success).toBe(true);
  });

  it('refuses a kind or a step kind that is not a dash-separated lower-case name', () => {
    // Assert
    expect(stored('Talos Upgrade').success).toBe(false);
    expect(stored('talos-upgrade', 'upgrade_worker').success).toBe(false);
    expect(stored('').success).toBe(false);
  });
});

describe('the grammar and the help come from the declarations', () => {
  const drain: PlaybookCommand = {
    name: 'remove',
    words: ['drain', 'node'],
    aliases: ['host'],
    argument: { kind: 'node' },
    request: { what: 'a drain', refuseAtOnce: {}, queued: (op) => op.id },
    help: 'drain one node (operators)',
    group: 'change',
    example: '/talos drain node talos-stg-w-1',
  };

  it('lists a declared command with its usage and help line', () => {
    // Act
    const help = helpText([drain]);

    // Assert
    expect(help).toContain('• `/talos drain node <node> [cluster]` — drain one node (operators)');
    expect(usage(drain, 'host')).toBe('/talos drain host <node> [cluster]');
  });

  it('parses every declared command by its own grammar', () => {
    // Act
    const parsed = PLAYBOOK_COMMANDS.map((c) => {
      const argument = c.argument.kind === 'version' ? ` ${c.argument.example}` : c.argument.kind === 'node' ? ' 10.0.30.12' : '';
      return parseCommand(`${c.words.join(' ')}${argument} staging`);
    });

    // Assert
    expect(parsed.map((r) => (r.ok ? r.command.kind : r.reason))).toEqual(PLAYBOOK_COMMANDS.map((c) => c.name));
  });

  it('names every declared usage when the second word is missing', () => {
    // Act
    const result = parseCommand('upgrade');

    // Assert
    const upgrades = PLAYBOOK_COMMANDS.filter((c) => c.words[0] === 'upgrade').map((c) => `\`${usage(c)}\``);
    expect(result).toEqual({ ok: false, reason: `Say what to upgrade: ${upgrades.join(' or ')}.` });
  });
});
