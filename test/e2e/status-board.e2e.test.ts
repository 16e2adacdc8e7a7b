import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Message, MessageVersion } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { approve, auditLines, clickStart, requestUpgrade, waitForApprovalRequest, waitForRootState } from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
const STOP_AFTER = 'talos-op-stop-after';
let h: Harness;

/** Brings up the node the simulator holds down in its reboot. */
let bringUp: () => void;

beforeEach(async () => {
  h = await startHarness();
  // The node stays down in its reboot until the test has seen the board and clicked: edits are throttled to one every few seconds.
  bringUp = h.sim.holdReboots('production');
});

afterEach(async () => {
  await h?.stop();
});

interface Element {
  action_id?: string;
  value?: string;
  confirm?: { text?: { text?: string } };
}

function buttonOf(message: Message | MessageVersion | undefined, actionId: string): Element | undefined {
  const blocks = (message?.blocks ?? []) as { elements?: Element[] }[];
  return blocks.flatMap((b) => b.elements ?? []).find((e) => e.action_id === actionId);
}

function blockTexts(message: Message | MessageVersion | undefined): string[] {
  return ((message?.blocks ?? []) as { text?: { text?: string } }[]).map((b) => b.text?.text ?? '');
}

describe('the root message of a running upgrade is a live status board', () => {
  it('shows the phase while a node reboots, and Stop after this node ends the operation after that node, the next one untouched', async () => {
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    await approve(h, await waitForApprovalRequest(h, plan));

    // While talos-prd-cp-1 reboots, the root says so, with the time so far and the Stop button.
    const rebooting = await h.slack.waitFor(
      () =>
        h.slack
          .versions(CHANNELS.production, plan.root.ts)
          .find((v) => blockTexts(v).some((t) => /⏳ \*Now:\* .*talos-prd-cp-1.*: rebooting talos-prd-cp-1, /.test(t))),
      { timeoutMs: 60_000, description: 'the board showing the reboot of talos-prd-cp-1' },
    );
    expect(blockTexts(rebooting).join('\n')).toContain('*Time so far:*');
    const stop = buttonOf(rebooting, STOP_AFTER);
    expect(stop?.value).toMatch(new RegExp(`^${plan.opId}\\.s\\d+t[a-z0-9]+$`));
    expect(stop?.confirm?.text?.text).toContain('then the operation stops');
    expect(h.sim.node('production', '10.0.30.11').talosVersion).not.toBe(TARGET);

    // Someone who may not cancel is refused, and nothing changes.
    await h.slack.clickButton({
      user: USERS.eve,
      channel: CHANNELS.production,
      messageTs: plan.root.ts,
      actionId: STOP_AFTER,
      value: stop!.value,
    });
    const refusal = await h.slack.waitFor(
      () => h.slack.ephemerals(CHANNELS.production, USERS.eve).find((e) => e.text.includes("Only production's operators and approvers")),
      { description: 'the refusal of a stranger' },
    );
    // It names who can stop, and says that nothing changed.
    expect(refusal.text).toContain(`can stop \`${plan.opId}\`: `);
    expect(refusal.text).toMatch(/<@U[A-Z0-9]+>[^\n]*\. Nothing changed\.$/);
    expect(refusal.text).not.toContain(`<@${USERS.eve}>`);
    await h.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: plan.root.ts,
      actionId: STOP_AFTER,
      value: stop!.value,
    });
    await h.slack.waitFor(() => h.slack.ephemerals(CHANNELS.production, USERS.alice).find((e) => /finishes as it would/.test(e.text)), {
      description: 'the answer to the Stop',
    });
    // The same click again changes nothing.
    await h.slack.clickButton({
      user: USERS.bob,
      channel: CHANNELS.production,
      messageTs: plan.root.ts,
      actionId: STOP_AFTER,
      value: stop!.value,
    });
    await h.slack.waitFor(() => h.slack.ephemerals(CHANNELS.production, USERS.bob).find((e) => /already stopping/.test(e.text)), {
      description: 'the refusal of a repeated Stop',
    });
    bringUp();

    const done = await waitForRootState(h, plan, /cancelled|completed|stopped at the first failure/);
    // The finished root leads with the outcome and the duration, in its text and its first block.
    expect(done.text).toMatch(/^🚫 cancelled after (under a minute|\d+ min), after [^\n]*talos-prd-cp-1/);
    expect(blockTexts(done)[0]).toMatch(/^\*🚫 cancelled after (under a minute|\d+ min), after .*talos-prd-cp-1.*; 3 steps not started\*$/);
    // Each finished step with its duration; no Stop button any more.
    expect(blockTexts(done).join('\n')).toMatch(/✅ 1\. [^\n]* · (under a minute|\d+ min)/);
    expect(blockTexts(done).join('\n')).toMatch(/✅ 2\. [^\n]*talos-prd-cp-1[^\n]* · (under a minute|\d+ min)/);
    expect(buttonOf(done, STOP_AFTER)).toBeUndefined();

    // talos-prd-cp-1 finished its upgrade; the next control plane was never asked.
    expect(h.sim.upgradeCount('production', '10.0.30.11')).toBe(1);
    expect(h.sim.node('production', '10.0.30.11').talosVersion).toBe(TARGET);
    expect(h.sim.upgradeCount('production', '10.0.30.12')).toBe(0);
    expect(h.sim.upgradeCount('production', '10.0.30.13')).toBe(0);
    const lines = auditLines(h, plan);
    expect(lines.filter((l) => /stop requested/.test(l))).toEqual([
      expect.stringMatching(new RegExp(`stop requested by <@${USERS.alice}> after .*talos-prd-cp-1`)),
    ]);
    expect(lines.some((l) => /cancelled between steps/.test(l))).toBe(true);
    expect(await h.command('status')).toContain('no operation holds it');

    // A stale click, from the board as it was, changes nothing.
    const before = h.slack.versions(CHANNELS.production, plan.root.ts).length;
    await h.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: plan.root.ts,
      actionId: STOP_AFTER,
      value: stop!.value,
    });
    await h.slack.waitFor(() => h.slack.ephemerals(CHANNELS.production, USERS.alice).find((e) => /no longer valid/.test(e.text)), {
      description: 'the refusal of a stale Stop',
    });
    expect(h.slack.versions(CHANNELS.production, plan.root.ts).length).toBe(before);
  });
});
