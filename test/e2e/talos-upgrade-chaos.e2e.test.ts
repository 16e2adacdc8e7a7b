/**
 * Regressions found by the chaos suite (`npm run chaos`): each test drives one production
 * upgrade through the fault that broke an invariant, and asserts the invariant.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';
import { approve, approveUntilDone, clickStart, requestUpgrade, waitForApprovalRequest } from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
const NODES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** Audit replies (`#<seq> …`) of the thread as first posted, in thread order. */
function auditReplies(harness: Harness, rootTs: string): string[] {
  return harness.slack
    .thread(CHANNELS.production, rootTs)
    .map((m) => harness.slack.versions(CHANNELS.production, m.ts)[0]?.text ?? '')
    .filter((t) => /^#\d+ /.test(t));
}

describe('a production upgrade under faults', () => {
  it('runs each node once when Redis restarts mid-node and the job whose lock lapsed runs again', async () => {
    h = await startHarness({ timing: { rebootMs: 1500 }, env: { JOB_LOCK_SECONDS: '1' } });
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await clickStart(harness, plan);
    await approve(harness, await waitForApprovalRequest(harness, plan));
    const second = await harness.slack.waitFor(
      () => harness.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.startsWith('🔐') && m.text.includes(NODES[1]!)),
      { timeoutMs: 30_000 },
    );
    await approve(harness, second);
    await harness.slack.waitFor(() => harness.sim.events.find((e) => e.kind === 'upgrade-start' && e.node === NODES[1]), { timeoutMs: 30_000 });

    // Longer than the job's lock: once Redis is back, BullMQ hands the still-running job out again.
    await harness.redis.stop({ hard: true });
    await sleep(2500);
    await harness.redis.restart();
    const done = await approveUntilDone(harness, plan);

    expect(done.text).toContain('completed');
    for (const node of NODES) expect(harness.sim.upgradeCount('production', node)).toBe(1);
    const requests = harness.slack.thread(CHANNELS.production, plan.root.ts).filter((m) => harness.slack.versions(CHANNELS.production, m.ts)[0]?.text.startsWith('🔐'));
    expect(requests.length).toBe(NODES.length);
    const replies = auditReplies(harness, plan.root.ts);
    expect(replies.map((t) => Number(/^#(\d+)/.exec(t)![1]))).toEqual(replies.map((_, i) => i + 1));
    for (const node of NODES) expect(replies.filter((t) => t.includes(`upgraded: control plane`) && t.includes(`${node},`)).length).toBe(1);
  });
});
