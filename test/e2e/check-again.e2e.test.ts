import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { auditLines, originalButtonValue, requestUpgrade } from '../support/upgrade-flow.ts';

// A refusal is a decision point, not a dead end: what refused a request may have been a passing fault, so the refused
// plan offers to check again, once, to the cluster's operators, through a fresh preflight.

const TARGET = 'v1.12.11';
const CHECK_AGAIN = 'talos-plan-again';
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 120_000);

afterAll(async () => {
  await h?.stop();
});

describe('a refused request', () => {
  it('offers Check again to operators, once, and the fresh preflight plans what the passing fault refused', async () => {
    // A talosctl read fails while the preflight's gate runs: the upgrade is refused.
    h.sim.faults.set('production', { fail: { 'etcd status': 'rpc error: code = Unavailable desc = connection reset by peer' } });
    const refused = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    expect(refused.root.text).toMatch(/refused/);
    expect(JSON.stringify(refused.root.blocks)).toContain(`"action_id":"${CHECK_AGAIN}"`);
    h.sim.faults.clear('production');

    // Someone who may not start operations is told so, and nothing is requested.
    await h.slack.clickButton({ user: USERS.eve, channel: CHANNELS.production, messageTs: refused.root.ts, actionId: CHECK_AGAIN });
    await h.slack.waitFor(() =>
      h.slack
        .ephemerals(CHANNELS.production, USERS.eve)
        .find((e) => e.text.startsWith('Only operators of *production* may ask for this again')),
    );

    await h.slack.clickButton({ user: USERS.bob, channel: CHANNELS.production, messageTs: refused.root.ts, actionId: CHECK_AGAIN });
    const answer = await h.slack.waitFor(() =>
      h.slack.ephemerals(CHANNELS.production, USERS.bob).find((e) => e.text.startsWith('Checking again as `op-')),
    );
    const child = /`(op-[a-z0-9]+)`/.exec(answer.text)![1]!;
    const plan = await h.slack.waitFor(
      () => h.slack.channelMessages(CHANNELS.production).find((m) => m.text.includes(child) && /planned|refused/.test(m.text)),
      { timeoutMs: 60_000, description: `the plan of ${child}` },
    );
    expect(plan.text).toMatch(/planned/);
    expect(JSON.stringify(plan.blocks)).toContain('"action_id":"talos-op-start"');
    // The new request is Bob's, for the same target.
    expect(plan.text).toContain(TARGET);
    expect(auditLines(h, refused).some((l) => l.includes(`requested again`) && l.includes(child))).toBe(true);
    // The refused plan now points to it, without the button.
    await h.slack.waitFor(() => h.slack.message(CHANNELS.production, refused.root.ts)?.blocks?.length !== undefined);
    const old = JSON.stringify(h.slack.message(CHANNELS.production, refused.root.ts)?.blocks);
    expect(old).toContain(`Requested again as \`${child}\``);
    expect(old).not.toContain(CHECK_AGAIN);

    // A second click on the old message (a stale copy on another phone) changes nothing.
    await h.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: refused.root.ts,
      actionId: CHECK_AGAIN,
      value: originalButtonValue(h, CHANNELS.production, refused.root.ts, CHECK_AGAIN),
    });
    await h.slack.waitFor(() =>
      h.slack
        .ephemerals(CHANNELS.production, USERS.alice)
        .find((e) => e.text === `\`${refused.opId}\` was already requested again as \`${child}\`. Nothing changed.`),
    );
    expect(h.slack.channelMessages(CHANNELS.production).filter((m) => /planned|refused/.test(m.text))).toHaveLength(2);
    await h.command(`cancel ${child}`);
  });
});
