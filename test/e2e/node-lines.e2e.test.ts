import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { approveUntilDone, auditLines, clickStart, opIdOf, requestUpgrade, type Plan } from '../support/upgrade-flow.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { waitForSettled } from '../support/settled.ts';

const TARGET = 'v1.12.11';
const NODES = ['talos-prd-cp-1', 'talos-prd-cp-2', 'talos-prd-cp-3'];
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** Every line of the thread's replies (as they read now) that is a node's status line: it leads with ⏳, ✅ or ❌ and the node's name. */
function nodeLines(harness: Harness, rootTs: string, node: string): { ts: string; line: string }[] {
  return harness.slack
    .thread(CHANNELS.production, rootTs)
    .flatMap((m) => m.text.split('\n').map((line) => ({ ts: m.ts, line })))
    .filter(({ line }) => new RegExp(`^(⏳|✅|❌) ${node} · `).test(line));
}

/** The audit numbers the thread shows (each message as it reads now) and the number of entries the bot stored, once the operation has settled. */
async function numbering(harness: Harness, plan: Plan): Promise<{ shown: number[]; stored: number }> {
  const opId = opIdOf(plan.root.text);
  await waitForSettled(harness);
  const shown = auditLines(harness, plan).map((l) => Number(/^#(\d+) /.exec(l)![1]));
  return { shown, stored: (await storedOperation(harness, opId)).audit.length };
}

/** 1 … n. */
const upTo = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

describe('the thread holds one line per node', () => {
  it('a production Talos upgrade: one line for each control plane, edited from its progress to its result', async () => {
    h = await startHarness();
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan, USERS.alice);
    const done = await approveUntilDone(h, plan, CHANNELS.production, USERS.carol);
    expect(done.text).toContain('completed');

    for (const node of NODES) {
      const lines = nodeLines(h, plan.root.ts, node);
      expect(lines).toHaveLength(1);
      expect(lines[0]!.line).toMatch(
        new RegExp(`^✅ ${node} · ${TARGET.replace(/\./g, '\\.')} · Ready · etcd 3/3 · gate ✓ · (under a minute|\\d+ min)$`),
      );
      // The line is one reply, posted once and edited in place: every version of it is about this node.
      const versions = h.slack.versions(CHANNELS.production, lines[0]!.ts).map((v) => v.text);
      expect(versions.every((v) => v.startsWith(`⏳ ${node} · `) || v.startsWith(`✅ ${node} · `))).toBe(true);
    }
    // Tables go in the attached evidence: each control plane's etcd table is a file in the thread, and no reply holds a table.
    const harness = h;
    await harness.slack.waitFor(() => harness.slack.uploadedFiles().filter((f) => f.filename.startsWith('etcd-before-')).length === 3);
    for (const [i, node] of NODES.entries()) {
      const file = harness.slack.uploadedFiles().find((f) => f.filename.startsWith(`etcd-before-${node}-`));
      expect(file?.thread_ts).toBe(plan.root.ts);
      expect(file?.content).toContain(`10.0.30.1${i + 1}`);
      expect(
        harness.slack
          .thread(CHANNELS.production, plan.root.ts)
          .some((m) => m.text.includes(`etcd before ${node}: the table is in the attached ${file!.filename}`)),
      ).toBe(true);
    }
    // Every stored entry shows in the thread once, in order, numbered without gaps (docs/operating.md).
    const { shown, stored } = await numbering(harness, plan);
    expect(stored).toBeGreaterThan(10);
    expect(shown).toEqual(upTo(stored));
    const thread = h.slack.thread(CHANNELS.production, plan.root.ts);
    expect(thread.filter((m) => JSON.stringify(m.blocks ?? []).includes('```')).map((m) => m.text.split('\n')[0])).toEqual([]);
  });

  it('a node that stops: ❌, the node, the reason in short; the other nodes have no line', async () => {
    h = await startHarness();
    h.sim.faults.set('production', { upgradeError: { '10.0.30.11': 'error validating installer image "x": unauthorized' } });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);
    expect(done.text).toContain('stopped at the first failure');

    const lines = nodeLines(h, plan.root.ts, 'talos-prd-cp-1');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.line).toMatch(/^❌ talos-prd-cp-1 · talosctl upgrade of 10\.0\.30\.11 failed · (under a minute|\d+ min)$/);
    expect(nodeLines(h, plan.root.ts, 'talos-prd-cp-2')).toEqual([]);
    const { shown, stored } = await numbering(h, plan);
    expect(shown).toEqual(upTo(stored));
  });
});
