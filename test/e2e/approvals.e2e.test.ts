import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import type { Message } from '../slack-emulator/index.ts';
import { approve, auditLines, clickStart, requestUpgrade, waitForApprovalRequest, waitForRootState } from '../support/upgrade-flow.ts';

// Approval requests as an approver meets them on a phone: the notification, the card, Stop with a reason, refusals
// that name who can act, and one approval for every control plane under `approvalScope: operation`.

const TARGET = 'v1.12.11';
let h: Harness;

afterEach(async () => {
  await h?.stop();
});

const first = (m: Message) => h.slack.versions(CHANNELS.production, m.ts)[0]!;
const blockTexts = (m: { blocks?: unknown[] }): string[] =>
  ((m.blocks ?? []) as { type: string; text?: { text: string }; elements?: { text?: string }[] }[]).map((b) =>
    b.type === 'actions' ? 'actions' : `${b.type}: ${b.text?.text ?? b.elements?.[0]?.text ?? ''}`,
  );
const requests = (plan: { root: Message }): Message[] =>
  h.slack.thread(CHANNELS.production, plan.root.ts).filter((m) => first(m).text.startsWith('🔐 '));

describe('an approval request on a phone', () => {
  it('leads with the cluster and the place in the rollout, orders the card, names who can approve, and stops with a reason', async () => {
    h = await startHarness();
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const request = await waitForApprovalRequest(h, plan);

    // The notification: cluster · place · short question (expiry), and no op id.
    const posted = first(request);
    expect(posted.text.split('\n')[0]).toMatch(
      /^🔐 production · control plane 1 of 3 · approve talos-prd-cp-1 → Talos v1\.12\.11\? \(expires in 30 min · \d\d:\d\d UTC\)$/,
    );
    expect(posted.text).not.toContain(plan.opId);
    // The card: question, the approvers once, where it stands, the previous node, etcd and its tolerance, the buttons, then expiry and image.
    const card = blockTexts(posted);
    expect(card.map((t) => t.split(':')[0])).toEqual(['section', 'context', 'section', 'section', 'section', 'actions', 'context']);
    expect(card[0]).toBe('section: *Approve the upgrade of control plane talos-prd-cp-1 (10.0.30.11) to v1.12.11?*');
    expect(card[1]).toBe('context: For <@U0CAROL> <!subteam^S0SRE>');
    expect(card[3]).toBe('section: *Previous node:* First node of the rollout.');
    expect(card[4]).toBe('section: *etcd:* 3 of 3 healthy, one leader\n*While it reboots:* etcd 2 of 3: no further failure tolerated');
    expect(card[6]).toMatch(/^context: Expires in 30 min · \d\d:\d\d UTC · `nocloud · [0-9a-f]{12} · v1\.12\.11`$/);
    expect(JSON.stringify(posted).split('<@U0CAROL>')).toHaveLength(2);
    // The etcd table and the entries before it went out first, in their own reply: the thread reads in order.
    const thread = h.slack.thread(CHANNELS.production, plan.root.ts);
    const before = thread[thread.findIndex((m) => m.ts === request.ts) - 1]!;
    expect(before.text).toMatch(
      /^#\d+ etcd before talos-prd-cp-1: the table is in the attached etcd-before-talos-prd-cp-1-\d{8}T\d{6}Z\.txt$/m,
    );
    expect(JSON.stringify(before.blocks)).not.toContain('```');
    const seqs = auditLines(h, plan).map((l) => Number(/^#(\d+)/.exec(l)![1]));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));

    // Someone who may not approve is told who can.
    await approve(h, request, USERS.eve);
    await h.slack.waitFor(() =>
      h.slack
        .ephemerals(CHANNELS.production, USERS.eve)
        .find((e) => e.text === "Only production's approvers can approve: <@U0CAROL> or anyone in <!subteam^S0SRE>. Nothing changed."),
    );

    // Cancel (the action that ends the operation now) asks for confirmation and opens the reason modal; its Submit stops with the reason recorded.
    const stopButton = (posted.blocks as { elements?: { action_id: string; confirm?: { title: { text: string } } }[] }[])
      .flatMap((b) => b.elements ?? [])
      .find((e) => e.action_id === 'talos-step-stop');
    expect(stopButton?.confirm?.title.text).toBe('Cancel the operation?');
    await approve(h, request, USERS.carol, CHANNELS.production, 'talos-step-stop');
    const modal = await h.slack.waitFor(() => h.slack.modals(USERS.carol).find((m) => m.open), { description: 'the stop reason modal' });
    expect(h.sim.upgradeCount('production', '10.0.30.11')).toBe(0);
    await h.slack.submitView(USERS.carol, modal.viewId, { reason: 'disk alarm on pve-2' });
    await waitForRootState(h, plan, /cancelled|stopped/);
    await h.slack.waitFor(() => auditLines(h, plan).find((l) => l.endsWith(' stopped at 10.0.30.11: reason: disk alarm on pve-2')));
    expect(h.slack.message(CHANNELS.production, request.ts)!.text).toMatch(/🛑 Stopped by <@U0CAROL> at .* Reason: disk alarm on pve-2/);
    const record = await h.slack.waitFor(() => h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`));
    expect(record?.content).toMatch(/: stopped by U0CAROL at \S+, reason: disk alarm on pve-2/);
    expect(h.sim.upgradeCount('production', '10.0.30.11')).toBe(0);
  });

  it('stops at once, without a reason, when the reason form cannot open in time', async () => {
    h = await startHarness();
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const request = await waitForApprovalRequest(h, plan);
    // The bot reaches views.open after the click's trigger expired (Slack allows 3 s), as a slow or restarting bot would.
    h.slack.faults.delay({ ms: 3_500, methods: ['views.open'] });

    await approve(h, request, USERS.carol, CHANNELS.production, 'talos-step-stop');

    await waitForRootState(h, plan, /cancelled|stopped/);
    await h.slack.waitFor(() => auditLines(h, plan).find((l) => / stopped at 10\.0\.30\.11/.test(l)));
    expect(auditLines(h, plan).some((l) => /reason:/.test(l))).toBe(false);
    expect(h.slack.modals(USERS.carol).some((m) => m.open)).toBe(false);
    expect(h.slack.callsTo('views.open').map((c) => c.error)).toEqual(['expired_trigger_id']);
    expect(h.slack.message(CHANNELS.production, request.ts)!.text).toMatch(/🛑 Stopped by <@U0CAROL>/);
    expect(h.sim.upgradeCount('production', '10.0.30.11')).toBe(0);
  });

  it('with approvalScope: operation asks once for the three control planes, and again after a failure and its Retry', async () => {
    h = await startHarness({ inventory: { extra: { production: { approvalScope: 'operation' } } } });
    h.sim.faults.set('production', { upgradeError: { '10.0.30.12': 'error validating installer image "x": unauthorized' } });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);

    const once = await waitForApprovalRequest(h, plan);
    expect(JSON.stringify(first(once).blocks)).toContain(
      'This approval covers all 3 control planes that start within 30 min of it; a failure, a Retry or a closed window asks again.',
    );
    await approve(h, once);
    await waitForRootState(h, plan, /stopped at the first failure/);
    expect(h.sim.node('production', '10.0.30.11').talosVersion).toBe(TARGET);
    // cp-2 went on cp-1's approval: no second request before its failure.
    expect(requests(plan)).toHaveLength(1);
    expect(auditLines(h, plan).some((l) => /approved 10\.0\.30\.12: covered by the approval of <@U0CAROL>/.test(l))).toBe(true);

    h.sim.faults.clear('production');
    const failure = await h.slack.waitFor(() =>
      h.slack
        .thread(CHANNELS.production, plan.root.ts)
        .find((m) => JSON.stringify(m.blocks ?? []).includes('"action_id":"talos-op-retry"')),
    );
    await h.slack.clickButton({ user: USERS.alice, channel: CHANNELS.production, messageTs: failure.ts, actionId: 'talos-op-retry' });
    // The Retry spent the operation's approval: cp-2 asks a person again, and that approval covers cp-3.
    const again = await h.slack.waitFor(() => (requests(plan).length === 2 ? requests(plan)[1] : undefined), {
      timeoutMs: 60_000,
      description: 'a new approval request after the Retry',
    });
    expect(first(again).text).toMatch(/^🔐 production · control plane 2 of 3 · approve talos-prd-cp-2 → Talos v1\.12\.11\?/);
    expect(blockTexts(first(again))[3]).toMatch(
      /^section: \*Previous node:\* talos-prd-cp-1 done in \d+ (s|min): v1\.12\.11, Ready, etcd 3\/3, gate passed$/,
    );
    await approve(h, again);
    const done = await waitForRootState(h, plan, /completed|stopped at the first failure/);
    expect(done.text).toContain('completed');
    expect(requests(plan)).toHaveLength(2);
    for (const node of ['10.0.30.11', '10.0.30.12', '10.0.30.13']) expect(h.sim.node('production', node).talosVersion).toBe(TARGET);
    const record = await h.slack.waitFor(() => h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`));
    expect(record?.content).toContain('covered by the operation-wide approval');
    expect(record?.content).toContain('(approvalScope: operation)');
  });
});
