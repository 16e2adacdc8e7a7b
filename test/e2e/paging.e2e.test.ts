/**
 * The people who must act are paged where Slack notifies them: the approvers by an approval
 * request shown in the channel (and once more before it expires), the operator who started an
 * operation by its completion and its failure. A request's expiry reads as the time left and the UTC
 * time; other times are Slack date tokens.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { approveUntilDone, clickStart, requestUpgrade, waitForApprovalRequest } from '../support/upgrade-flow.ts';

// A patch of the minor the simulated clusters run: a plan the version rules accept however they evolve.
const TARGET = 'v1.12.11';
const APPROVERS = '<@U0CAROL> <!subteam^S0SRE>';
const DATE_TOKEN = /<!date\^\d+\^\{date_short_pretty\} \{time\}\|\d{4}-\d\d-\d\d \d\d:\d\d UTC>/;
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

interface Button {
  action_id?: string;
  confirm?: { title: { text: string }; text: { text: string } };
}

function buttonOf(message: Message | undefined, actionId: string): Button | undefined {
  const blocks = (message?.blocks ?? []) as { elements?: Button[] }[];
  return blocks.flatMap((b) => b.elements ?? []).find((e) => e.action_id === actionId);
}

describe('paging the people who must act', () => {
  it('broadcasts each approval request with its question first and its approvers mentioned, confirms Approve naming the node, and mentions the operator at completion', async () => {
    h = await startHarness();
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan, USERS.alice);
    const request = await waitForApprovalRequest(harness, plan);
    const posted = harness.slack.versions(CHANNELS.production, request.ts)[0]!;

    // The request is one thread reply, also shown in the channel, where Slack notifies the people it mentions.
    expect(request.subtype).toBe('thread_broadcast');
    expect(harness.slack.channelMessages(CHANNELS.production).map((m) => m.ts)).toContain(request.ts);
    // What the phone shows leads with the cluster and the place in the rollout; the approvers are mentioned once, on the card.
    expect(posted.text.split('\n')[0]).toMatch(
      new RegExp(
        `^🔐 production · control plane 1 of 3 · approve talos-prd-cp-1 → Talos ${TARGET.replace(/\./g, '\\.')}\\? \\(expires in 30 min · \\d\\d:\\d\\d UTC\\)$`,
      ),
    );
    expect(posted.text).not.toContain(plan.opId);
    expect(JSON.stringify(posted.blocks)).toContain(`For ${APPROVERS}`);
    expect(JSON.stringify(posted).split(APPROVERS)).toHaveLength(2);
    expect(JSON.stringify(posted.blocks)).toMatch(/Expires in 30 min · \d\d:\d\d UTC/);
    const approveButton = buttonOf(request, 'talos-step-approve');
    expect(approveButton?.confirm?.title.text).toBe('Approve talos-prd-cp-1?');
    expect(approveButton?.confirm?.text.text).toContain('talos-prd-cp-1 (10.0.30.11)');

    const done = await approveUntilDone(harness, plan);

    expect(done.text).toContain('completed');
    // Decided, the request keeps what the approver saw and says who approved it and when.
    const decided = harness.slack.message(CHANNELS.production, request.ts)!;
    expect(decided.text).toMatch(
      new RegExp(
        `^#\\d+ ✅ Approved by <@U0CAROL> at ${DATE_TOKEN.source}: the upgrade of control plane talos-prd-cp-1 \\(10\\.0\\.30\\.11\\)`,
      ),
    );
    for (const evidence of ['*Previous node:*', '*etcd:*', 'Expires in ', '`nocloud · '])
      expect(JSON.stringify(decided.blocks)).toContain(evidence);
    expect(buttonOf(decided, 'talos-step-approve')).toBeUndefined();
    const thread = harness.slack.thread(CHANNELS.production, plan.root.ts);
    expect(thread.some((m) => /^#\d+ <@U0ALICE> \*Terraform follow-up\*/m.test(m.text))).toBe(true);
    expect(JSON.stringify(harness.slack.message(CHANNELS.production, plan.root.ts)?.blocks)).toMatch(
      new RegExp(`<@U0ALICE> at ${DATE_TOKEN.source}`),
    );
  });

  it('mentions the operator who started the operation, and the approver who approved last, when it stops at a failure', async () => {
    h = await startHarness();
    h.sim.faults.set('production', { upgradeError: { '10.0.30.11': 'error validating installer image "x": unauthorized' } });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan, USERS.bob);

    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped at the first failure');
    const failure = h.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped'));
    expect(failure?.text).toMatch(
      new RegExp(
        `❌ Stopped at control plane talos-prd-cp-1 \\(10\\.0\\.30\\.11[\\s\\S]* until an operator cancels it\\.[\\s\\S]* <@U0BOB> started it; <@U0ALICE> asked for it; <@U0CAROL> approved last, ${DATE_TOKEN.source}$`,
      ),
    );
  });

  it('reminds the approvers once, in the channel, before an unanswered request expires', async () => {
    // A request lives 9 s; the reminder comes 6 s before it expires.
    h = await startHarness({ env: { APPROVAL_TTL_MINUTES: '0.15', APPROVAL_REMINDER_MINUTES: '0.1' } });
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    const request = await waitForApprovalRequest(harness, plan);
    const reminders = () => harness.slack.thread(CHANNELS.production, plan.root.ts).filter((m) => m.text.includes('⏰'));

    const reminder = await harness.slack.waitFor(() => reminders()[0], { timeoutMs: 20_000, intervalMs: 20, description: 'the reminder' });
    const requestWhenReminded = harness.slack.message(CHANNELS.production, request.ts)!.text;
    await harness.slack.waitFor(() => /^#\d+ ⏱ Expired/m.test(harness.slack.message(CHANNELS.production, request.ts)?.text ?? ''), {
      timeoutMs: 20_000,
      description: 'the expiry',
    });

    expect(requestWhenReminded).not.toMatch(/Expired/);
    expect(reminder.subtype).toBe('thread_broadcast');
    expect(reminder.text).toMatch(
      new RegExp(
        `^⏰ Approve the upgrade of control plane talos-prd-cp-1 \\(10\\.0\\.30\\.11\\) to ${TARGET.replace(/\./g, '\\.')}\\? <[^|>]+\\|The request> expires`,
      ),
    );
    // One clock: the time left on the bot's clock and the UTC time.
    expect(reminder.text).toMatch(/ expires in under a minute · \d\d:\d\d UTC; /);
    expect(reminder.text.split('\n')[0]!.endsWith(APPROVERS)).toBe(true);
    expect(reminders()).toHaveLength(1);
  });
});
