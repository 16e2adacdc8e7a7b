/**
 * Regressions found by the chaos suite (`npm run chaos`): each test drives one production
 * upgrade through the fault that broke an invariant, and asserts the invariant.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type KnownBlock, WebClient } from '@slack/web-api';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { Operation } from '../../src/ops/operation.ts';
import { OPS_QUEUE } from '../../src/queue/job-schemas.ts';
import { RUN_JOB_NAME } from '../../src/queue/operation-jobs.ts';
import {
  approve,
  approveUntilDone,
  clickStart,
  opIdOf,
  requestUpgrade,
  waitForApprovalRequest,
  type Plan,
} from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
const NODES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** Audit entries (`#<seq> …`, one per line) of the thread as first posted, in thread order; a reply's own in number order (a request leads its reply). */
function auditReplies(harness: Harness, rootTs: string): string[] {
  const seqOf = (line: string): number => Number(/^#(\d+) /.exec(line)![1]);
  return harness.slack.thread(CHANNELS.production, rootTs).flatMap((m) =>
    (harness.slack.versions(CHANNELS.production, m.ts)[0]?.text ?? '')
      .split('\n')
      .filter((t) => /^#\d+ /.test(t))
      .sort((a, b) => seqOf(a) - seqOf(b)),
  );
}

/** An approval request of `node`, as first posted or still pending: its entry's line names the node. */
const requestFor = (node: string) => new RegExp(`^#\\d+ approval requested: ${node.replace(/\./g, '\\.')}$`, 'm');

/** Polls the operation as stored in Redis until `predicate` holds. */
async function waitForOperation(harness: Harness, opId: string, predicate: (op: Operation) => boolean): Promise<Operation> {
  const client = new Redis(harness.redis.url, { maxRetriesPerRequest: 1 });
  try {
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(10)) {
      const raw = await client.get(`talos:op:${opId}`);
      const op = raw === null ? undefined : Operation.parse(JSON.parse(raw));
      if (op !== undefined && predicate(op)) return op;
    }
    throw new Error(`${opId} did not reach the expected state in 10 s`);
  } finally {
    client.disconnect();
  }
}

/** The approver's Override of the missing staging rehearsal, without Start: a fault goes in between. */
async function override(harness: Harness, plan: Plan, options: { onRoot?: boolean } = {}): Promise<void> {
  await harness.slack.clickButton({
    user: USERS.carol,
    channel: CHANNELS.production,
    messageTs: plan.root.ts,
    actionId: 'talos-op-override',
  });
  // Its audit entry goes to the thread with the run's first reply.
  await waitForOperation(harness, plan.opId, (op) => op.override !== undefined && op.audit.some((e) => e.event.startsWith('override')));
  // Two approvers override a missing rehearsal: the second is another approver.
  await harness.slack.clickButton({
    user: USERS.dave,
    channel: CHANNELS.production,
    messageTs: plan.root.ts,
    actionId: 'talos-op-override',
  });
  await waitForOperation(harness, plan.opId, (op) => op.override?.second !== undefined);
  // A click from a copy of the plan changes the stored operation; the root the bot keeps shows it once it is known.
  if (options.onRoot === false) return;
  await harness.slack.waitFor(
    () => /overridden by .* and <@U0DAVE>/.test(JSON.stringify(harness.slack.message(CHANNELS.production, plan.root.ts)?.blocks ?? [])),
    { description: 'the override' },
  );
}

/** Ids of the operation's run jobs that BullMQ found stalled (their lock lapsed) and handed out again. */
async function runsHandedOutAgain(harness: Harness, opId: string): Promise<string[]> {
  const client = new Redis(harness.redis.url, { maxRetriesPerRequest: 1 });
  const queue = new Queue(OPS_QUEUE, { connection: client });
  try {
    const jobs = await queue.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed']);
    return jobs.filter((j) => j.name === RUN_JOB_NAME && j.id?.startsWith(`${opId}-`) === true && j.stalledCounter > 0).map((j) => j.id!);
  } finally {
    await queue.close();
    client.disconnect();
  }
}

const clickOnlyStart = (harness: Harness, plan: Plan) =>
  harness.slack.clickButton({ user: USERS.alice, channel: CHANNELS.production, messageTs: plan.root.ts, actionId: 'talos-op-start' });

const seqs = (replies: string[]): number[] => replies.map((t) => Number(/^#(\d+)/.exec(t)![1]));

describe('a production upgrade under faults', () => {
  it('runs each node once when Redis restarts mid-node and the job whose lock lapsed runs again', async () => {
    h = await startHarness({ timing: { rebootMs: 1500 }, env: { JOB_LOCK_SECONDS: '1' } });
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    await approve(harness, await waitForApprovalRequest(harness, plan));
    const second = await harness.slack.waitFor(
      () => harness.slack.thread(CHANNELS.production, plan.root.ts).find((m) => requestFor(NODES[1]!).test(m.text)),
      { timeoutMs: 30_000 },
    );
    await approve(harness, second);
    await harness.slack.waitFor(() => harness.sim.events.find((e) => e.kind === 'upgrade-start' && e.node === NODES[1]), {
      timeoutMs: 30_000,
    });

    // Down for longer than the job's lock, so the lock has lapsed when Redis is back and BullMQ hands the
    // still-running job out again. The length of the outage is the fault itself, so here time is waited for.
    const lockMs = Number(harness.env.JOB_LOCK_SECONDS) * 1000;
    await harness.redis.stop({ hard: true });
    await sleep(2.5 * lockMs);
    await harness.redis.restart();
    const done = await approveUntilDone(harness, plan);
    // A run handed out again may still be going after the root says completed: count once it is done.
    await waitForSettled(harness);

    expect(await runsHandedOutAgain(harness, plan.opId)).not.toEqual([]);
    expect(done.text).toContain('completed');
    for (const node of NODES) expect(harness.sim.upgradeCount('production', node)).toBe(1);
    const requests = harness.slack
      .thread(CHANNELS.production, plan.root.ts)
      .filter((m) => (harness.slack.versions(CHANNELS.production, m.ts)[0]?.text ?? '').startsWith('🔐 production · control plane '));
    expect(requests.length).toBe(NODES.length);
    const replies = auditReplies(harness, plan.root.ts);
    expect(seqs(replies)).toEqual(replies.map((_, i) => i + 1));
    for (const node of NODES) expect(replies.filter((t) => t.includes(`upgraded: control plane`) && t.includes(`${node},`)).length).toBe(1);
  });

  it('finishes, with every audit reply, when Slack fails for longer than its client retries as Start is clicked', async () => {
    h = await startHarness();
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await override(harness, plan);

    // More failures than one call's retries: the root edit after Start fails for good.
    harness.slack.faults.serverError({ count: 14, status: 503 });
    await clickOnlyStart(harness, plan);
    const done = await approveUntilDone(harness, plan);

    expect(done.text).toContain('completed');
    for (const node of NODES) expect(harness.sim.upgradeCount('production', node)).toBe(1);
    const replies = auditReplies(harness, plan.root.ts);
    expect(seqs(replies)).toEqual(replies.map((_, i) => i + 1));
    expect(replies.filter((t) => /^#\d+ started/.test(t)).length).toBe(1);
    expect(replies.at(-1)).toMatch(/Terraform follow-up/);
  });

  it('posts an audit reply once when Slack answers 500 after it was written', async () => {
    h = await startHarness();
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await override(harness, plan);

    harness.slack.faults.serverError({ count: 1, status: 500, methods: ['chat.postMessage'], afterWrite: true });
    await clickOnlyStart(harness, plan);
    await waitForApprovalRequest(harness, plan);

    const replies = auditReplies(harness, plan.root.ts);
    expect(harness.slack.callsTo('chat.postMessage').some((c) => c.status === 500)).toBe(true);
    expect(seqs(replies)).toEqual(replies.map((_, i) => i + 1));
    expect(replies.filter((t) => /^#\d+ started/.test(t)).length).toBe(1);
  });

  it('posts the plan once Slack answers again when it failed longer than the client retries under the preflight', async () => {
    h = await startHarness();
    const harness = h;

    // The plan's post is the first call to Slack: its retries all fail, and two more after them.
    harness.slack.faults.serverError({ count: 8, status: 502 });
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);

    expect(plan.root.text).toContain('planned');
    expect(harness.slack.channelMessages(CHANNELS.production).filter((m) => m.text.includes(plan.opId))).toHaveLength(1);
    // The preflight's entry goes to the thread with the run's first reply.
    await clickStart(harness, plan);
    const replies = await harness.slack.waitFor(() => {
      const list = auditReplies(harness, plan.root.ts);
      return list.length > 0 ? list : undefined;
    });
    expect(replies[0]).toBe('#1 preflight passed, plan posted: 5 steps');
  });

  it('adopts the plan Slack wrote before answering 5xx, so clicks on it count, starts only from it, and keeps the audit whole', async () => {
    h = await startHarness();
    const harness = h;

    // The plan's post is written, then answered 502: people see it before the bot knows where it is.
    harness.slack.faults.serverError({ count: 1, status: 502, methods: ['chat.postMessage'], afterWrite: true });
    const ack = await harness.command(`upgrade talos ${TARGET}`);
    const opId = opIdOf(ack);
    const shown = await harness.slack.waitFor(() => harness.slack.channelMessages(CHANNELS.production).find((m) => m.text.includes(opId)), {
      timeoutMs: 30_000,
      intervalMs: 5,
    });
    await override(harness, { opId, root: shown, ack }, { onRoot: false });
    const { rootTs } = await waitForOperation(harness, opId, (op) => op.rootTs !== undefined);
    const plan = { opId, root: harness.slack.message(CHANNELS.production, rootTs!)!, ack };
    // A copy the bot never found (Slack wrote it and lost the answer, and no look-up saw it) is no plan to start from.
    const copy = await new WebClient(harness.slack.botToken, {
      slackApiUrl: harness.slack.apiUrl,
      retryConfig: { retries: 0 },
    }).chat.postMessage({
      channel: CHANNELS.production,
      text: plan.root.text,
      blocks: plan.root.blocks as unknown as KnownBlock[],
    });
    await clickOnlyStart(harness, { opId, root: harness.slack.message(CHANNELS.production, copy.ts!)!, ack });
    await harness.slack.waitFor(() =>
      harness.slack.ephemerals().find((e) => e.user === USERS.alice && /This copy of the plan/.test(e.text)),
    );
    await clickOnlyStart(harness, plan);
    const done = await approveUntilDone(harness, plan);

    expect(done.text).toContain('completed');
    expect(rootTs).toBe(shown.ts);
    expect(harness.slack.callsTo('chat.postMessage').filter((c) => c.status === 502)).toHaveLength(1);
    const replies = auditReplies(harness, plan.root.ts);
    expect(seqs(replies)).toEqual(replies.map((_, i) => i + 1));
    // Two approvers override the missing staging rehearsal, each with an entry of their own.
    expect(replies.slice(0, 4).map((t) => /^#\d+ ([a-z ,]+)/.exec(t)?.[1])).toEqual([
      'preflight passed, plan posted',
      'override',
      'override',
      'started',
    ]);
  });

  it('keeps each entry once when an approval request is clicked before the bot learned where Slack wrote it', async () => {
    h = await startHarness();
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    await approve(harness, await waitForApprovalRequest(harness, plan));

    // The second request: Slack writes it, then answers 500 (other posts, such as the live progress of the first node, go through).
    harness.slack.faults.serverError({
      count: 1,
      status: 500,
      methods: ['chat.postMessage'],
      afterWrite: true,
      where: (args) => typeof args.text === 'string' && requestFor(NODES[1]!).test(args.text),
    });
    const second = await harness.slack.waitFor(
      () => harness.slack.thread(CHANNELS.production, plan.root.ts).find((m) => requestFor(NODES[1]!).test(m.text)),
      { timeoutMs: 30_000, intervalMs: 2 },
    );
    await approve(harness, second);
    const done = await approveUntilDone(harness, plan);

    expect(done.text).toContain('completed');
    const failed = harness.slack.callsTo('chat.postMessage').filter((c) => c.status === 500);
    expect(failed.map((c) => requestFor(NODES[1]!).test(String(c.args.text)))).toEqual([true]);
    const replies = auditReplies(harness, plan.root.ts);
    expect(seqs(replies)).toEqual(replies.map((_, i) => i + 1));
    // The request was posted once, and its approval replaced its own entry under the same number.
    const requested = replies.filter((l) => requestFor(NODES[1]!).test(l));
    expect(requested).toHaveLength(1);
    const seq = /^#(\d+) /.exec(requested[0]!)![1];
    expect(harness.slack.message(CHANNELS.production, second.ts)!.text).toMatch(
      new RegExp(`^#${seq} ✅ Approved by <@U0CAROL> .*talos-prd-cp-2`),
    );
    expect(replies.filter((l) => /upgraded: control plane \S+ \(10\.0\.30\.11/.test(l))).toHaveLength(1);
  });
});
