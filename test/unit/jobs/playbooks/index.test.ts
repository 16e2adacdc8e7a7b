import type { SlashCommand } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { helpFor } from '../../../../handlers/commands/help.ts';
import { playbookHandlers } from '../../../../handlers/commands/index.ts';
import type { CommandDeps, CommandHandler } from '../../../../handlers/commands/command-context.ts';
import { guidedForm, openGuided, typedCommand, type GuidedDeps } from '../../../../handlers/guided-commands.ts';
import { parseCommand } from '../../../../handlers/parse-command.ts';
import type { Playbook } from '../../../../jobs/engine/playbook.ts';
import { PLAYBOOKS } from '../../../../jobs/playbooks/index.ts';
import { NODE_MODAL } from '../../../../src/chat/guided-modals.ts';
import { inventory } from '../../../support/engine-fixture.ts';

/**
 * A throwaway playbook with a node argument, added to the registry and nowhere else: everything a
 * command needs on the Slack side is built from its declaration.
 */
const drain: Playbook = {
  ...PLAYBOOKS['node-remove'],
  command: {
    name: 'node-drain',
    words: ['drain'],
    argument: { kind: 'node' },
    help: 'drain one node (operators)',
    group: 'change',
    example: '/talos drain talos-prd-w-1',
    form: { title: 'Drain a node', submit: 'Plan the drain' },
    request: { what: 'a node drain', refuseAtOnce: {}, queued: (op) => `Draining (\`${op.id}\`).` },
  },
};
const registry = { ...PLAYBOOKS, 'node-drain': drain };
const commands = Object.values(registry).map((p: Playbook) => p.command);
const inv = inventory();
const production = inv.clusters[0]!;

describe('a playbook added to the registry', () => {
  it('is parsed by its declared grammar, and its node left out asks for its form', () => {
    // Act
    const typed = parseCommand('drain 10.0.30.21 production', commands);
    const bare = parseCommand('drain', commands);
    const unregistered = parseCommand('drain 10.0.30.21 production');

    // Assert
    expect(typed).toEqual({ ok: true, command: { kind: 'node-drain', node: '10.0.30.21', cluster: 'production' } });
    expect(bare).toEqual({ ok: true, command: { kind: 'guided', playbook: 'node-drain' } });
    expect(unregistered).toMatchObject({ ok: false, reason: expect.stringContaining('`/talos drain` is not a command') });
  });

  it('has its help line among the changes, with its form', () => {
    // Act
    const help = helpFor(inv, 'U0ALICE', commands);

    // Assert
    const change = help.slice(help.indexOf('*Change*'), help.indexOf('*Manage*'));
    expect(change).toContain('• `/talos drain <node> [cluster]` — drain one node (operators) (leave out the node for a form)');
  });

  it('opens its node picker, and the picker submitted is its typed command', async () => {
    // Arrange
    const opened: Record<string, unknown>[] = [];
    const client = {
      views: { open: (args: { view: Record<string, unknown> }) => (opened.push(args.view), Promise.resolve({ ok: true })) },
    } as unknown as WebClient;
    const deps = {
      inventory: inv,
      authorizer: { isMember: (user: string, ids: readonly string[]) => Promise.resolve(ids.includes(user)) },
      now: () => new Date('2026-12-05T03:00:00.000Z'),
    } as unknown as GuidedDeps;

    // Act
    const refusal = await openGuided(client, 'trigger-1', production.operators[0]!, production.channel, 'node-drain', deps, registry);
    const submitted = typedCommand(
      {
        private_metadata: String(opened[0]?.['private_metadata']),
        state: { values: { node: { node: { type: 'static_select', selected_option: { value: '10.0.30.21' } } } } },
      },
      registry,
    );

    // Assert
    expect(refusal).toBeUndefined();
    expect(opened[0]).toMatchObject({ callback_id: NODE_MODAL, title: { text: 'Drain a node' }, submit: { text: 'Plan the drain' } });
    expect(JSON.stringify(opened[0])).toContain('Same as `/talos drain NODE` on *production*');
    expect(guidedForm('node-drain')).toBeUndefined();
    expect(submitted).toEqual({ text: 'drain 10.0.30.21 production', cluster: 'production' });
  });

  it('has its handler, which asks for its own operation', async () => {
    // Arrange
    const handler = (playbookHandlers(registry) as Record<string, CommandHandler<'node-remove'> | undefined>)['node-drain'];
    const deps = { inventory: inv, authorizer: { isMember: () => Promise.resolve(false) } } as unknown as CommandDeps;
    const slack = { user_id: 'U0NOBODY', channel_id: production.channel, trigger_id: 't-1', text: 'drain 10.0.30.21' } as SlashCommand;

    // Act
    const outcome = await handler!({ kind: 'node-drain', node: '10.0.30.21' } as never, slack, deps);

    // Assert: the refusal names the throwaway's request, so the handler is the one its declaration built.
    expect(Object.keys(playbookHandlers(PLAYBOOKS))).not.toContain('node-drain');
    expect(outcome.reply).toBe(
      'Only operators of *production* may start a node drain. Ask one of them, or have yourself added to `operators` in the inventory. Nothing was started.',
    );
  });
});
