import { afterEach, describe, expect, it } from 'vitest';
import type { BotProcess } from '../support/bot-process.ts';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';
import { approve, approveUntilDone, clickStart, requestUpgrade, waitForApprovalRequest, auditLines } from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
const CONTROL_PLANES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
let h: Harness;
let second: BotProcess;

/** Two replicas of the bot against one Redis, one Slack app and one estate. */
async function startTwoReplicas(env: Record<string, string> = {}): Promise<void> {
  h = await startHarness({ env });
  second = await h.secondBot();
  await second.start();
  await h.slack.waitForConnections(2);
}

afterEach(async () => {
  await h?.stop();
});

function messages(bot: BotProcess, msg: string): Record<string, unknown>[] {
  return bot.logLines().filter((l) => l.msg === msg);
}

describe('two replicas', () => {
  it('handle each of 20 /talos health commands exactly once: each runs a gate or joins the one running', async () => {
    // Sixteen gates at once starve two CPUs of the test machine for seconds; a lock that
    // outlives that keeps this test about deliveries, not about stalled-job recovery.
    await startTwoReplicas({ JOB_LOCK_SECONDS: '30' });
    const acks = await Promise.all(Array.from({ length: 20 }, () => h.command('health')));
    expect(acks.every((a) => a.includes('Running the health gate on *production*'))).toBe(true);

    // Each delivery reached one replica: the two together enqueued exactly 20 jobs, and both took some.
    const enqueued = await h.slack.waitFor(
      () => {
        const counts = [h.bot, second].map((b) => messages(b, 'command enqueued').length);
        return counts[0]! + counts[1]! >= 20 ? counts : undefined;
      },
      { timeoutMs: 60_000, description: '20 enqueued commands' },
    );
    expect(enqueued[0]! + enqueued[1]!).toBe(20);
    expect(enqueued.every((n) => n > 0)).toBe(true);
    // Each job ran a gate or joined the one running for the cluster, exactly once: 20 in all.
    const handled = (): { gates: unknown[]; joined: number } => ({
      gates: [h.bot, second].flatMap((b) => messages(b, 'health gate started').map((l) => l.op)),
      joined: [h.bot, second].map((b) => messages(b, 'health gate request joined the running gate').length).reduce((a, b) => a + b, 0),
    });
    const { gates, joined } = await h.slack.waitFor(
      () => {
        const now = handled();
        return now.gates.length + now.joined >= 20 ? now : undefined;
      },
      { timeoutMs: 110_000, description: '20 handled health requests' },
    );
    expect(gates.length + joined).toBe(20);
    expect(new Set(gates).size).toBe(gates.length);

    // Finished: a verdict with its eight checks, or (when the loaded machine made `tofu output` time out) "could not run".
    const finished = (ts: string, text: string): boolean =>
      (/Health gate (passed|failed)/.test(text) && h.slack.thread(CHANNELS.production, ts).length >= 8) ||
      /Health gate could not run/.test(text);
    const roots = await h.slack.waitFor(
      () => {
        const all = h.slack.channelMessages(CHANNELS.production);
        return all.length >= gates.length && all.every((m) => finished(m.ts, m.text)) ? all : undefined;
      },
      { timeoutMs: 110_000, description: 'every gate finished' },
    );
    // One root per gate that ran, and no gate ran twice: a second run would have threaded its checks again under the same root.
    expect(roots).toHaveLength(gates.length);
    expect(roots.map((m) => h.slack.thread(CHANNELS.production, m.ts).length).filter((n) => n !== 0 && n !== 8)).toEqual([]);
  }, 120_000);

  it('resume an upgrade on the other replica when the one running a node dies, without doing any node twice', async () => {
    await startTwoReplicas();
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    await approve(h, await waitForApprovalRequest(h, plan));
    await h.slack.waitFor(() => h.sim.events.find((e) => e.kind === 'upgrade-start' && e.node === CONTROL_PLANES[0]), {
      timeoutMs: 30_000,
      description: 'the upgrade of the first control plane',
    });

    // The replica whose run started last is the one upgrading the node.
    const latestRun = (bot: BotProcess): number => Math.max(0, ...messages(bot, 'operation run started').map((l) => Number(l.time)));
    const [victim, survivor] = latestRun(h.bot) > latestRun(second) ? [h.bot, second] : [second, h.bot];
    const interruptedJob = messages(victim, 'operation run started').at(-1)?.job;
    expect(interruptedJob).toBeDefined();
    await victim.kill();

    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    for (const node of CONTROL_PLANES) {
      expect([node, h.sim.upgradeCount('production', node), h.sim.node('production', node).talosVersion]).toEqual([node, 1, TARGET]);
    }
    expect(h.sim.maxControlPlanesDownAtOnce('production')).toBe(1);
    // The survivor took the operation over, by whichever comes first: BullMQ handing out the dead replica's
    // job once its lock lapsed, or the reconciler's resume once the run lease lapsed. It observed the node.
    expect(messages(survivor, 'operation run started').map((l) => l.job)).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`^(${String(interruptedJob)}|${plan.opId}-resume)$`))]),
    );
    // The step's result in the thread says the node was observed after the restart, not asked again.
    expect(auditLines(h, plan).filter((l) => l.includes('upgrade was already requested before a restart'))).toHaveLength(1);
  });
});
