import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { approve, opIdOf, opLink, waitForApprovalRequest, waitForRootState, type Plan } from '../support/upgrade-flow.ts';

let h: Harness;

// A fresh estate, Redis and bot per test: a removal wipes a simulated node for good.
beforeEach(async () => {
  h = await startHarness({ etcd: 'real' });
});

afterEach(async () => {
  await h?.stop();
});

function resetCalls() {
  return h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv[0] === 'reset');
}

/** argv with the per-session talosconfig path replaced, so the rest can be compared exactly. */
function argvOf(call: { argv: string[] }): string[] {
  return call.argv.map((a, i) => (call.argv[i - 1] === '--talosconfig' ? '<talosconfig>' : a));
}

/** Sends the command and waits for the root message: the plan (running, waiting for approval) or the refusal. */
async function requestRemoval(text: string, channel: string = CHANNELS.production): Promise<Plan> {
  const ack = await h.command(text, { channel });
  const opId = opIdOf(ack);
  const root = await h.slack.waitFor(
    () => h.slack.channelMessages(channel).find((m) => m.text.includes(opId) && /Removal of/.test(m.text)),
    {
      timeoutMs: 30_000,
      description: `the plan of ${opId}`,
    },
  );
  return { opId, root, ack };
}

describe('/talos remove of a control plane', () => {
  it('checks quorum, asks an approver, resets gracefully through the others, deletes the Node and gates without it', async () => {
    // The volumes keep their two replicas on the nodes that remain: Longhorn stays healthy, which the final check requires.
    for (const volume of h.sim.cluster('production').kube.volumes) volume.replicas = ['talos-prd-cp-1', 'talos-prd-cp-2'];
    const plan = await requestRemoval('remove 10.0.30.13');
    expect(plan.root.text).toContain('Removal of 10.0.30.13 (talos-prd-cp-3): production');
    expect(JSON.stringify(plan.root.blocks)).toContain(
      '3 members need 2 for quorum; after removal 2 remain, which keep quorum (2 of 2) but tolerate no further failure',
    );
    const request = await waitForApprovalRequest(h, plan);
    // The notification names the cluster and the ask; the card's first block asks the question in full.
    expect(request.text).toContain('🔐 production · node removal · approve the reset and removal of talos-prd-cp-3?');
    expect(JSON.stringify(request.blocks?.[0])).toContain('Approve the reset and removal of talos-prd-cp-3 (10.0.30.13) from production?');
    expect(resetCalls()).toEqual([]);

    await approve(h, request, USERS.carol);
    const done = await waitForRootState(h, plan, /completed|stopped/);
    expect(done.text).toContain('completed');
    expect(resetCalls().map(argvOf)).toEqual([
      [
        'reset',
        '--graceful',
        '--reboot=false',
        '--talosconfig',
        '<talosconfig>',
        '--endpoints',
        '10.0.30.11,10.0.30.12',
        '--nodes',
        '10.0.30.13',
      ],
    ]);
    const node = h.sim.node('production', '10.0.30.13');
    expect([node.etcdMember, node.k8sRegistered, node.stage]).toEqual([false, false, 'off']);
    expect(h.sim.events.filter((e) => e.node === '10.0.30.13' && ['reset', 'node-deleted'].includes(e.kind)).map((e) => e.kind)).toEqual([
      'reset',
      'node-deleted',
    ]);
    // The gate after the removal runs against the two remaining control planes only.
    const lastHealth = h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv[0] === 'health').at(-1)!;
    expect(lastHealth.argv[lastHealth.argv.indexOf('--control-plane-nodes') + 1]).toBe('10.0.30.11,10.0.30.12');

    // The maintenance record is the operation's last post: the thread is complete once it is there.
    const record = await h.slack.waitFor(() => h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`));
    expect(record.content).toContain('| 1 | reset-node | 10.0.30.13 |');
    const thread = h.slack.thread(CHANNELS.production, plan.root.ts);
    expect(thread.some((m) => m.text.includes('verified: health gate passed without 10.0.30.13'))).toBe(true);
    const next = thread.find((m) => m.text.includes('*Next (runbook):*'));
    expect(next?.text).toContain('Remove the control plane entry for 10.0.30.13 from the production `talos_nodes` inventory');
    expect(next?.text).toContain('Apply Terraform');
    expect(await h.command('status')).toContain('no operation holds it');
  });
});

describe('refusals', () => {
  it('refuses the only control plane (disaster recovery), an unknown node and a stranger, before any job', async () => {
    expect(await h.command('remove 10.0.20.204', { channel: CHANNELS.staging })).toContain(
      'is the only control plane of *staging*: removing it leaves no etcd member, which is disaster recovery, not a node removal. Follow the disaster-recovery runbook',
    );
    expect(await h.command('remove 10.0.30.14')).toContain(
      '10.0.30.14 is not a node of *production*. Its nodes: talos-prd-cp-1 (10.0.30.11), talos-prd-cp-2 (10.0.30.12), talos-prd-cp-3 (10.0.30.13). Nothing was started.',
    );
    expect(await h.command('remove 10.0.30.13', { user: USERS.eve })).toContain('Only operators of *production*');
    expect(h.sim.calls.filter((c) => c.bin === 'talosctl')).toEqual([]);
  });

  it("refuses staging's last worker while its only control plane keeps the NoSchedule taint, naming the node and the taint", async () => {
    const plan = await requestRemoval('remove 10.0.20.205', CHANNELS.staging);
    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toContain(
      'removing talos-stg-w-1 (10.0.20.205) would leave no node that accepts workloads: talos-stg-cp-1 (control plane) is tainted node-role.kubernetes.io/control-plane:NoSchedule',
    );
    expect(resetCalls()).toEqual([]);
  });

  it('refuses when the remaining members could not keep quorum, with the arithmetic', async () => {
    h.sim.faults.set('production', { etcdUnhealthy: { '10.0.30.13': 'Failed' } });
    const plan = await requestRemoval('remove 10.0.30.12');
    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toContain(
      '3 members need 2 for quorum; after removal 2 remain (1 healthy), which cannot keep quorum (2 of 2 needed): do not remove this member',
    );
    expect(resetCalls()).toEqual([]);
    expect(await h.command('status')).toContain('no operation holds it');
  });

  it('refuses when the health gate fails', async () => {
    h.sim.faults.set('production', { fluxStalled: ['apps'] });
    const plan = await requestRemoval('remove 10.0.30.13');
    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toContain('the health gate failed');
    expect(resetCalls()).toEqual([]);
  });

  it('refuses while another operation holds the cluster', async () => {
    const first = await requestRemoval('remove 10.0.30.13');
    await waitForApprovalRequest(h, first);
    expect(await h.command('remove 10.0.30.12')).toContain(`held by ${opLink(first)}`);
    expect(resetCalls()).toEqual([]);
  });
});

describe('approval', () => {
  it('shows the quorum as it is when asked, and checks quorum and the gate again once approved: a gate failed by then stops before the reset', async () => {
    const plan = await requestRemoval('remove 10.0.30.13');
    const request = await waitForApprovalRequest(h, plan);
    expect(JSON.stringify(request.blocks)).toContain(
      '3 members need 2 for quorum; after removal 2 remain, which keep quorum (2 of 2) but tolerate no further failure',
    );
    h.sim.faults.set('production', { fluxStalled: ['apps'] });

    await approve(h, request, USERS.carol);
    const done = await waitForRootState(h, plan, /completed|stopped/);

    expect(done.text).toContain('stopped');
    const stop = h.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped'));
    expect(stop?.text).toContain('the health gate failed before the reset of 10.0.30.13; nothing was reset');
    expect(resetCalls()).toEqual([]);
    expect(h.sim.node('production', '10.0.30.13').etcdMember).toBe(true);
  });

  it('ignores a click by an operator or a stranger; nothing is reset', async () => {
    const plan = await requestRemoval('remove 10.0.30.13');
    const request = await waitForApprovalRequest(h, plan);
    await approve(h, request, USERS.eve);
    await approve(h, request, USERS.bob);
    const refusals = await h.slack.waitFor(() => {
      const list = h.slack.ephemerals(CHANNELS.production).filter((e) => e.text.startsWith("Only production's approvers can approve: "));
      return list.length >= 2 ? list : undefined;
    });
    expect(refusals.map((e) => e.user).sort()).toEqual([USERS.bob, USERS.eve]);
    expect(resetCalls()).toEqual([]);
    expect(h.sim.node('production', '10.0.30.13').etcdMember).toBe(true);
    expect((await waitForRootState(h, plan, /waiting for approval/)).text).toContain(plan.opId);
    expect(resetCalls()).toEqual([]);
  });
});
