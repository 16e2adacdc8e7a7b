import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGate } from '../support/gate-run.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { requestUpgrade } from '../support/upgrade-flow.ts';

/** Every call of `bin` (talosctl, tofu) on production since the `since`th call. */
function callsSince(h: Harness, since: number, bin: string): string[][] {
  return h.sim.calls
    .slice(since)
    .filter((c) => c.bin === bin && c.cluster === 'production')
    .map((c) => c.argv);
}

// An inventory that lists no node, as the bot is meant to be run: only the cluster itself knows the names.
describe('a node named as Kubernetes shows it, with an inventory that lists no node', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ inventory: { withoutNodeLists: true } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('is planned for the address the last look saw, and the preflight confirms the name', async () => {
    // Arrange: the health gate is a look at the cluster.
    const gate = await runGate(h);

    // Act
    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');

    // Assert
    expect(gate.root.text).toContain('Health gate passed');
    expect(plan.ack).toContain('talos-prd-cp-2 is 10.0.30.12 as of the last look at the cluster');
    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('planned');
    expect(op.target.node).toBe('10.0.30.12');
    expect(op.target.nodeName).toBe('talos-prd-cp-2');
    expect(op.target.namedAs).toMatchObject({ name: 'talos-prd-cp-2', by: 'last-look' });
    expect(op.notes[0]).toMatch(
      /^talos-prd-cp-2 is 10\.0\.30\.12: the last look at the cluster \(.+\) said so, and this preflight's own look confirms it\.$/,
    );
    await h.command(`cancel ${plan.opId}`);
  }, 180_000);

  it('is offered by the node picker by name and address, and the choice is planned by its name', async () => {
    // Act
    await h.slack.sendSlashCommand({ user: USERS.alice, channel: CHANNELS.production, text: 'replace' });
    const modal = await h.slack.waitFor(() => h.slack.modals(USERS.alice).find((m) => m.view.callback_id === 'talos-guided-node'), {
      description: 'the node picker',
    });
    const blocks = modal.view.blocks as { block_id?: string; element?: { options?: { text: { text: string }; value: string }[] } }[];
    const options = blocks.find((b) => b.block_id === 'node')?.element?.options ?? [];
    const submitted = await h.slack.submitView(USERS.alice, modal.viewId, { node: 'talos-prd-cp-3' });
    const reply = await h.slack.waitFor(
      () => h.slack.ephemerals(CHANNELS.production, USERS.alice).find((e) => e.text.includes('talos-prd-cp-3 is 10.0.30.13')),
      { timeoutMs: 30_000, description: 'the reply of the chosen replacement' },
    );

    // Assert
    expect(options.map((o) => [o.text.text, o.value])).toEqual([
      ['talos-prd-cp-1 (10.0.30.11)', 'talos-prd-cp-1'],
      ['talos-prd-cp-2 (10.0.30.12)', 'talos-prd-cp-2'],
      ['talos-prd-cp-3 (10.0.30.13)', 'talos-prd-cp-3'],
    ]);
    expect(blocks.some((b) => b.block_id === 'typed-node')).toBe(true);
    expect(submitted.outcome).toBe('closed');
    const opId = /op-[a-z0-9]+/.exec(reply.text)![0];
    await h.slack.waitFor(
      () => h.slack.channelMessages(CHANNELS.production).find((m) => m.text.includes(opId) && /planned|refused/.test(m.text)),
      {
        timeoutMs: 30_000,
        description: 'the plan',
      },
    );
    const op = await storedOperation(h, opId);
    expect([op.target.node, op.target.namedAs?.name]).toEqual(['10.0.30.13', 'talos-prd-cp-3']);
    await h.command(`cancel ${opId}`);
  }, 120_000);

  it('refuses a name no node has, listing the nodes by name and address, and starts nothing', async () => {
    // Act
    const reply = await h.command('remove talos-prd-cp-9');

    // Assert
    expect(reply).toContain('No node of *production* is named talos-prd-cp-9');
    expect(reply).toContain('talos-prd-cp-1 (10.0.30.11), talos-prd-cp-2 (10.0.30.12), talos-prd-cp-3 (10.0.30.13)');
    expect(reply).toContain('Nothing was started.');
  }, 60_000);

  it('refuses in the preflight when the address no longer carries the name the last look saw, and changes nothing', async () => {
    // Arrange: the record of an earlier look, when talos-prd-cp-2 had the address talos-prd-cp-3 has now.
    const client = new Redis(h.redis.url, { maxRetriesPerRequest: 1 });
    try {
      const key = 'talos:observed-estate:production';
      const record = JSON.parse((await client.get(key))!) as { nodeNames: Record<string, string> };
      record.nodeNames = { '10.0.30.13': 'talos-prd-cp-2' };
      await client.set(key, JSON.stringify(record));
    } finally {
      client.disconnect();
    }
    const since = h.sim.calls.length;

    // Act
    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');

    // Assert
    expect(plan.ack).toContain('talos-prd-cp-2 is 10.0.30.13 as of the last look at the cluster');
    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('refused');
    expect(op.refusals).toEqual([
      expect.stringMatching(
        /^talos-prd-cp-2 was 10\.0\.30\.13 by the last look at the cluster \(.+\), but 10\.0\.30\.13 is talos-prd-cp-3 now and talos-prd-cp-2 is 10\.0\.30\.12, so nothing was planned/,
      ),
    ]);
    expect(callsSince(h, since, 'tofu').filter((argv) => argv[0] === 'plan' || argv[0] === 'apply')).toEqual([]);
    expect(callsSince(h, since, 'talosctl').filter((argv) => ['reset', 'upgrade'].includes(argv[0]!))).toEqual([]);
    expect(h.slack.channelMessages(CHANNELS.production).find((m) => m.text.includes(plan.opId))?.text).toContain('refused');
  }, 120_000);
});
