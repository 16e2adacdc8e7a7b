/**
 * Approvals for people who are asleep: an approver takes an operation's approvals from the card, the
 * later cards page only them (through a restart and onto another replica), and the whole group is paged
 * again when a request nears its expiry. The card carries what the notification promised.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message, MessageVersion } from '../slack-emulator/index.ts';
import type { BotProcess } from '../support/bot-process.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import {
  approve,
  auditLines,
  clickStart,
  originalButtonValue,
  requestUpgrade,
  waitForApprovalMatching,
  waitForApprovalRequest,
} from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
const GROUP = '<@U0CAROL> <!subteam^S0SRE>';
const TAKE = 'talos-step-take';
let h: Harness | undefined;
let second: BotProcess | undefined;

afterEach(async () => {
  // The harness stops the second replica too.
  second = undefined;
  await h?.stop();
  h = undefined;
});

type Block = { type: string; text?: { text: string }; elements?: { action_id?: string; text?: string | { text: string } }[] };
const blocksOf = (m: MessageVersion): Block[] => (m.blocks ?? []) as Block[];
const buttons = (m: MessageVersion): string[] =>
  blocksOf(m).flatMap((b) => (b.type === 'actions' ? (b.elements ?? []).map((e) => e.action_id!) : []));
const buttonLabels = (m: MessageVersion): string[] =>
  blocksOf(m).flatMap((b) => (b.type === 'actions' ? (b.elements ?? []).map((e) => (e.text as { text: string }).text) : []));
const texts = (m: MessageVersion): string[] => blocksOf(m).map((b) => b.text?.text ?? (b.elements?.[0]?.text as string | undefined) ?? '');

describe('taking the approvals of an operation', () => {
  it('pages only the approver who took them, across a restart onto another replica, and the group again near expiry; the requester cannot take them', async () => {
    // Alice, who asks for and starts the upgrade, is an approver too: four eyes keep her from approving it, or taking its approvals.
    h = await startHarness({ inventory: { approvers: { production: [USERS.carol, 'S0SRE', USERS.alice] } } });
    const harness = h;
    const first = (m: Message) => harness.slack.versions(CHANNELS.production, m.ts)[0]!;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan, USERS.alice);
    const request = await waitForApprovalRequest(harness, plan);
    const card = first(request);

    // The card: who it pages, where the operation stands, the previous node, etcd and its tolerance while the node reboots.
    expect(texts(card)[1]).toBe(`For ${GROUP}`);
    expect(texts(card)[2]).toMatch(/^\*production\* · node \d of \d · v\S+ → v1\.12\.11 · asked and started by alice$/);
    expect(texts(card)[3]).toBe('*Previous node:* First node of the rollout.');
    expect(texts(card)[4]).toBe('*etcd:* 3 of 3 healthy, one leader\n*While it reboots:* etcd 2 of 3: no further failure tolerated');
    expect(texts(card).at(-1)).toMatch(/^Expires in 30 min · \d\d:\d\d UTC · `nocloud · /);
    expect(card.text.split('\n')[0]).toMatch(/\(expires in 30 min · \d\d:\d\d UTC\)$/);
    // One verb ends the operation now: Cancel; Take it sits beside the decision.
    expect(buttons(card)).toEqual(['talos-step-approve', 'talos-step-stop', TAKE]);
    expect(buttonLabels(card)).toEqual(['Approve', 'Cancel', 'Take it']);

    // The requester, who may not approve, may not take the approvals either; neither may someone who is no approver.
    const take = (user: string, m: Message) =>
      harness.slack.clickButton({
        user,
        channel: CHANNELS.production,
        messageTs: m.ts,
        actionId: TAKE,
        value: originalButtonValue(harness, CHANNELS.production, m.ts, TAKE),
      });
    await take(USERS.alice, request);
    await harness.slack.waitFor(() =>
      harness.slack
        .ephemerals(CHANNELS.production, USERS.alice)
        .find((e) => e.text.startsWith('*production* requires four eyes: you requested or started') && e.text.endsWith('Nothing changed.')),
    );
    await take(USERS.eve, request);
    await harness.slack.waitFor(() =>
      harness.slack
        .ephemerals(CHANNELS.production, USERS.eve)
        .find(
          (e) =>
            e.text ===
            "Only production's approvers can take its approvals: <@U0CAROL>, anyone in <!subteam^S0SRE> or <@U0ALICE>. Nothing changed.",
        ),
    );

    // Dave, of the approvers' group, takes them: the operation and its thread record it.
    await take(USERS.dave, request);
    await harness.slack.waitFor(() =>
      harness.slack.ephemerals(CHANNELS.production, USERS.dave).find((e) => e.text.startsWith('You took the approvals')),
    );
    await harness.slack.waitFor(() => auditLines(harness, plan).find((l) => l.includes('approvals taken by <@U0DAVE>')), {
      description: 'the taking in the thread',
    });
    const redis = new Redis(harness.redis.url, { maxRetriesPerRequest: 1 });
    const ops = new Queue('talos-ops', { connection: redis });
    try {
      const stored = JSON.parse((await redis.get(`talos:op:${plan.opId}`))!) as { approvalsTaken?: { by: string } };
      expect(stored.approvalsTaken?.by).toBe(USERS.dave);

      // The bot restarts as another replica: what was taken is in Redis, not in the process.
      second = await harness.secondBot();
      await second.start();
      await harness.slack.waitForConnections(2);
      await harness.bot.stop();

      await approve(harness, request, USERS.dave);
      const next = await waitForApprovalMatching(harness, plan, /talos-prd-cp-2/);
      const nextCard = first(next);

      // The next card pages only Dave: no other approver, no group, is mentioned on it.
      expect(texts(nextCard)[1]).toBe(
        "For <@U0DAVE>, who took this operation's approvals; every approver is paged again if it nears its expiry",
      );
      expect(JSON.stringify(nextCard)).not.toContain('<@U0CAROL>');
      expect(JSON.stringify(nextCard)).not.toContain('subteam');
      expect(texts(nextCard)[3]).toMatch(/^\*Previous node:\* talos-prd-cp-1 done in /);

      // Near its expiry, the reminder pages the whole group again (its delayed job brought forward: no waiting on the clock).
      const nonce = originalButtonValue(harness, CHANNELS.production, next.ts, 'talos-step-approve')!.split('.')[1]!;
      // The card is in Slack a moment before its reminder is queued.
      let reminderJob: Awaited<ReturnType<typeof ops.getJob>>;
      await harness.slack.waitFor(
        async () => {
          reminderJob = await ops.getJob(`${plan.opId}-remind-${nonce}`);
          return reminderJob;
        },
        { description: 'the reminder queued' },
      );
      expect(await reminderJob!.getState()).toBe('delayed');
      await reminderJob!.promote();
      const reminder = await harness.slack.waitFor(
        () => harness.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('⏰')),
        { timeoutMs: 20_000, description: 'the reminder' },
      );
      expect(reminder.subtype).toBe('thread_broadcast');
      expect(reminder.text).toMatch(/expires in \d+ min · \d\d:\d\d UTC/);
      expect(reminder.text).toContain('<@U0DAVE> took the approvals and has not answered.');
      expect(reminder.text.split('\n')[0]!.endsWith(GROUP)).toBe(true);
    } finally {
      await ops.close();
      redis.disconnect();
    }
  }, 150_000);
});
