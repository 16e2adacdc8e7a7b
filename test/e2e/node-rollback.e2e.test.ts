import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { approve, opIdOf, opLink, waitForApprovalRequest, waitForRootState, type Plan } from '../support/upgrade-flow.ts';

let h: Harness;

// A fresh estate, Redis and bot per test: a rollback reboots a simulated node for good.
beforeEach(async () => {
  h = await startHarness();
});

afterEach(async () => {
  await h?.stop();
});

function rollbackCalls() {
  return h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv[0] === 'rollback');
}

/** argv with the per-session talosconfig path replaced, so the rest can be compared exactly. */
function argvOf(call: { argv: string[] }): string[] {
  return call.argv.map((a, i) => (call.argv[i - 1] === '--talosconfig' ? '<talosconfig>' : a));
}

/** The state a failed Talos upgrade leaves: the node runs the new image, the old one is its fallback. */
function upgradedWithFallback(node: string, running: string, fallback: string): void {
  const n = h.sim.node('production', node);
  n.fallbackVersion = fallback;
  n.fallbackSchematic = n.schematic;
  n.talosVersion = running;
}

/** Sends the command and waits for the root message: the plan (running, waiting for approval) or the refusal. */
async function requestRollback(text: string, user: string = USERS.alice): Promise<Plan> {
  const ack = await h.command(text, { user });
  const opId = opIdOf(ack);
  const root = await h.slack.waitFor(
    () =>
      h.slack
        .channelMessages(CHANNELS.production)
        .find((m) => m.text.includes(opId) && /Rollback of/.test(m.text) && !/preflight/.test(m.text)),
    { timeoutMs: 30_000, description: `the plan of ${opId}` },
  );
  return { opId, root, ack };
}

describe('/talos rollback of a control plane', () => {
  it('asks an approver, rolls back through the other control planes, verifies the version and reminds about Terraform', async () => {
    upgradedWithFallback('10.0.30.12', 'v1.12.11', 'v1.11.5');
    const plan = await requestRollback('rollback 10.0.30.12');
    expect(plan.root.text).toContain('Rollback of 10.0.30.12 (talos-prd-cp-2): production');
    const request = await waitForApprovalRequest(h, plan);
    // The notification names the cluster and the ask; the card's first block asks the question in full.
    expect(request.text).toContain('🔐 production · node rollback · approve talos-prd-cp-2 → its previous Talos image?');
    expect(JSON.stringify(request.blocks?.[0])).toContain('Approve the rollback of talos-prd-cp-2 (10.0.30.12) on production?');
    expect(JSON.stringify(request.blocks)).toContain('while 10.0.30.12 reboots 2 other healthy members remain, which keeps quorum');
    expect(rollbackCalls()).toEqual([]);
    expect(await h.command('status')).toContain(`locked by ${opLink(plan)}`);

    await approve(h, request, USERS.carol);
    const done = await waitForRootState(h, plan, /completed|stopped/);
    expect(done.text).toContain('completed');
    expect(rollbackCalls().map(argvOf)).toEqual([
      ['rollback', '--talosconfig', '<talosconfig>', '--endpoints', '10.0.30.11,10.0.30.13', '--nodes', '10.0.30.12'],
    ]);
    expect(h.sim.node('production', '10.0.30.12').talosVersion).toBe('v1.11.5');
    expect(h.sim.events.filter((e) => e.kind === 'rollback').map((e) => [e.node, e.fromVersion, e.toVersion])).toEqual([
      ['10.0.30.12', 'v1.12.11', 'v1.11.5'],
    ]);

    // The maintenance record is the operation's last post: the thread is complete once it is there.
    const record = await h.slack.waitFor(() => h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`));
    const thread = h.slack.thread(CHANNELS.production, plan.root.ts);
    expect(thread.some((m) => m.text.includes('rollback verified: 10.0.30.12 is back on v1.11.5 and Ready (ran v1.12.11)'))).toBe(true);
    const followUp = thread.find((m) => m.text.includes('was rolled back'));
    expect(followUp?.text).toContain('it now runs v1.11.5 (ran v1.12.11)');
    expect(followUp?.text).toContain('Do not move the Terraform `talos_version` declaration until the incident is resolved');
    expect(record.content).toContain(
      '- Operation: Rollback of talos-prd-cp-2 to v1.11.5 — node-rollback of 10.0.30.12 to v1.11.5 (from v1.12.11)',
    );
    expect(await h.command('status')).toContain('no operation holds it');
  });
});

describe('refusals', () => {
  it('refuses an unknown node with the known addresses, and a user who is not an operator', async () => {
    expect(await h.command('rollback 10.0.30.99')).toContain(
      '10.0.30.99 is not a node of *production*. Its nodes: talos-prd-cp-1 (10.0.30.11), talos-prd-cp-2 (10.0.30.12), talos-prd-cp-3 (10.0.30.13). Nothing was started.',
    );
    expect(await h.command('rollback 10.0.30.12', { user: USERS.eve })).toContain('Only operators of *production*');
    expect(await h.command('rollback 10.0.20.204')).toContain('10.0.20.204 is not a node of *production*. Its nodes: ');
    expect(h.sim.calls.filter((c) => c.bin === 'talosctl')).toEqual([]);
  });

  it('never runs two rollbacks at once: a second one is refused while the first holds the cluster', async () => {
    upgradedWithFallback('10.0.30.12', 'v1.12.11', 'v1.11.5');
    upgradedWithFallback('10.0.30.13', 'v1.12.11', 'v1.11.5');
    const first = await requestRollback('rollback 10.0.30.12');
    await waitForApprovalRequest(h, first);
    expect(await h.command('rollback 10.0.30.13')).toContain(`held by ${opLink(first)}`);
    expect(rollbackCalls()).toEqual([]);
  });

  it('refuses a control-plane rollback that would cost etcd quorum, with the arithmetic', async () => {
    upgradedWithFallback('10.0.30.12', 'v1.12.11', 'v1.11.5');
    h.sim.faults.set('production', { etcdUnhealthy: { '10.0.30.13': 'Failed' } });
    const plan = await requestRollback('rollback 10.0.30.12');
    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toContain(
      '3 members need 2 for quorum; while 10.0.30.12 reboots 1 other healthy member remains, which cannot keep quorum',
    );
    expect(rollbackCalls()).toEqual([]);
    expect(await h.command('status')).toContain('no operation holds it');
  });
});

describe('approval', () => {
  it('ignores a click by an operator or a stranger, and a Stop ends it without touching the node', async () => {
    upgradedWithFallback('10.0.30.12', 'v1.12.11', 'v1.11.5');
    const plan = await requestRollback('rollback 10.0.30.12');
    const request = await waitForApprovalRequest(h, plan);
    await approve(h, request, USERS.eve);
    await approve(h, request, USERS.alice);
    const refusals = await h.slack.waitFor(() => {
      const list = h.slack.ephemerals(CHANNELS.production).filter((e) => e.text.startsWith("Only production's approvers can approve: "));
      return list.length >= 2 ? list : undefined;
    });
    expect(refusals.map((e) => e.user).sort()).toEqual([USERS.alice, USERS.eve]);
    expect(rollbackCalls()).toEqual([]);

    // Stop opens the reason modal; the stop happens on its submission, here without a reason.
    await approve(h, request, USERS.alice, CHANNELS.production, 'talos-step-stop');
    const modal = await h.slack.waitFor(() => h.slack.modals(USERS.alice).find((m) => m.open), { description: 'the stop reason modal' });
    expect(rollbackCalls()).toEqual([]);
    await h.slack.submitView(USERS.alice, modal.viewId, {});
    await waitForRootState(h, plan, /cancelled/);
    expect(h.slack.message(CHANNELS.production, request.ts)?.text).toMatch(/^(#\d+ )?🛑 Stopped by <@U0ALICE>/m);
    expect(rollbackCalls()).toEqual([]);
    expect(h.sim.node('production', '10.0.30.12').talosVersion).toBe('v1.12.11');
    expect(await h.command('status')).toContain('no operation holds it');
  });
});

describe('a node that does not come back', () => {
  it('fails with the evidence and keeps the cluster locked until an operator cancels', async () => {
    upgradedWithFallback('10.0.30.12', 'v1.12.11', 'v1.11.5');
    h.sim.faults.set('production', { rollbackNoReturn: ['10.0.30.12'] });
    const plan = await requestRollback('rollback 10.0.30.12');
    await approve(h, await waitForApprovalRequest(h, plan), USERS.carol);

    const failed = await waitForRootState(h, plan, /stopped at the first failure|completed/, CHANNELS.production, 60_000);
    expect(failed.text).toContain('stopped at the first failure');
    expect(rollbackCalls()).toHaveLength(1);
    const failure = await h.slack.waitFor(() =>
      h.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped')),
    );
    expect(failure.text).toContain('10.0.30.12 did not come back within 8 s after the rollback');
    expect(JSON.stringify(failure.blocks)).toMatch(/last observation: talosctl: .*no route to host.*Kubernetes: not Ready/);
    expect(JSON.stringify(failure.blocks)).not.toContain('talos-op-retry');
    expect(await h.command('status')).toContain(`locked by ${opLink(plan)}`);
    expect(await h.command(`cancel ${plan.opId}`)).toContain('is free for the next operation');
  });
});
