import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOME_ACTION } from '../../src/chat/buttons.ts';
import type { JsonObject } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';

// The operators' buttons on the Home tab, through the bot process: Bob operates both clusters,
// Alice staging only, Eve none. A click is a block_actions from the Home view (no channel, no
// response_url); its answer goes to the cluster's channel.

let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    inventory: { operators: { staging: [USERS.alice, USERS.bob], production: [USERS.bob] } },
  });
});

afterAll(async () => {
  await h?.stop();
});

/** Opens `user`'s Home and returns it once drawn. */
async function home(user: string): Promise<JsonObject> {
  const before = h.slack.publishedViews(user).length;
  await h.slack.openHome(user);
  const drawn = await h.slack.waitFor(() => h.slack.publishedViews(user)[before], { timeoutMs: 30_000, description: `${user}'s Home` });
  return drawn.view;
}

/** Each actions block's id with the action ids and values of its buttons. */
function buttons(view: JsonObject): Record<string, [string, string][]> {
  const blocks = (view.blocks as JsonObject[]).filter((b) => b.type === 'actions');
  return Object.fromEntries(
    blocks.map((b) => [
      String(b.block_id),
      (b.elements as JsonObject[]).map((e) => [String(e.action_id), String(e.value)] as [string, string]),
    ]),
  );
}

/** The next ephemeral `user` gets in `channel`. */
function nextEphemeral(channel: string, user: string, before: number, description: string): Promise<string> {
  return h.slack.waitFor(() => h.slack.ephemerals(channel, user)[before]?.text, { timeoutMs: 30_000, description });
}

describe('the Home tab buttons', () => {
  it('are drawn on each cluster the viewer operates, and on no other', async () => {
    // Act
    const bob = buttons(await home(USERS.bob));
    const alice = buttons(await home(USERS.alice));
    const eve = buttons(await home(USERS.eve));

    // Assert
    const all = (cluster: string): [string, string][] => [
      [HOME_ACTION.gate, cluster],
      [HOME_ACTION.upgradeTalos, cluster],
      [HOME_ACTION.upgradeK8s, cluster],
      [HOME_ACTION.snapshot, cluster],
    ];
    expect(bob).toEqual({ 'home-actions-production': all('production'), 'home-actions-staging': all('staging') });
    expect(alice).toEqual({ 'home-actions-staging': all('staging') });
    expect(eve).toEqual({});
    expect(h.slack.callsTo('views.publish').every((c) => c.ok === true)).toBe(true);
  });

  it("runs the health gate in the cluster's channel, its answer there and not in the Home", async () => {
    // Arrange
    await home(USERS.bob);
    const posted = h.slack.channelMessages(CHANNELS.production).length;
    const told = h.slack.ephemerals(CHANNELS.production, USERS.bob).length;

    // Act
    const click = await h.slack.clickInHome({ user: USERS.bob, actionId: HOME_ACTION.gate, blockId: 'home-actions-production' });

    // Assert
    expect(click.timedOut).toBe(false);
    expect(await nextEphemeral(CHANNELS.production, USERS.bob, told, "the gate's answer")).toContain(
      'Running the health gate on *production*',
    );
    const verdict = await h.slack.waitFor(
      () =>
        h.slack
          .channelMessages(CHANNELS.production)
          .slice(posted)
          .find((m) => /Health gate (passed|failed)/.test(m.text)),
      { timeoutMs: 30_000, description: 'the verdict in the production channel' },
    );
    expect(verdict.text).toMatch(/Health gate passed/);
    expect(h.slack.channelMessages(CHANNELS.staging).some((m) => /Health gate/.test(m.text))).toBe(false);
  });

  it("takes a snapshot of the cluster as `/talos snapshot` does, posted in the cluster's channel", async () => {
    // Arrange
    await home(USERS.alice);
    const told = h.slack.ephemerals(CHANNELS.staging, USERS.alice).length;

    // Act
    await h.slack.clickInHome({ user: USERS.alice, actionId: HOME_ACTION.snapshot, blockId: 'home-actions-staging' });

    // Assert
    const answer = await nextEphemeral(CHANNELS.staging, USERS.alice, told, "the snapshot's answer");
    const opId = /op-[a-z0-9]+/.exec(answer)![0];
    const root = await h.slack.waitFor(
      () => h.slack.channelMessages(CHANNELS.staging).find((m) => m.text.includes(opId) && m.text.startsWith('✅')),
      { timeoutMs: 30_000, description: 'the finished snapshot in the staging channel' },
    );
    expect(root.text).toMatch(/`staging-[^`]+`/);
    expect(h.slack.channelMessages(CHANNELS.production).some((m) => m.text.includes(opId))).toBe(false);
  });

  it('opens the guided upgrade form on the click, the cluster chosen', async () => {
    // Arrange
    await home(USERS.bob);
    const before = h.slack.modals(USERS.bob).length;

    // Act
    await h.slack.clickInHome({ user: USERS.bob, actionId: HOME_ACTION.upgradeK8s, blockId: 'home-actions-production' });

    // Assert
    const modal = await h.slack.waitFor(() => h.slack.modals(USERS.bob)[before], { timeoutMs: 20_000, description: 'the upgrade form' });
    expect(h.slack.openModal(USERS.bob)?.viewId).toBe(modal.viewId);
    expect(modal.view.callback_id).toBe('talos-guided-upgrade');
    const cluster = (modal.view.blocks as JsonObject[]).find((b) => b.block_id === 'cluster')?.element as JsonObject;
    expect(cluster.initial_option).toMatchObject({ value: 'production' });
    expect(h.slack.callsTo('views.open').at(-1)).toMatchObject({ ok: true });
    await h.slack.closeView(USERS.bob, modal.viewId);
  });

  it('refuses a forged click for a cluster the clicker does not operate, naming who can, and changes nothing', async () => {
    // Arrange: Alice's Home has staging's buttons; she sends one naming production.
    await home(USERS.alice);
    await waitForSettled(h);
    const posted = h.slack.channelMessages(CHANNELS.production).length;
    const calls = h.sim.calls.length;
    const modals = h.slack.modals(USERS.alice).length;
    const told = h.slack.ephemerals(CHANNELS.production, USERS.alice).length;

    // Act
    await h.slack.clickInHome({ user: USERS.alice, actionId: HOME_ACTION.gate, blockId: 'home-actions-staging', value: 'production' });
    const gateRefusal = await nextEphemeral(CHANNELS.production, USERS.alice, told, 'the refusal of the gate');
    await h.slack.clickInHome({
      user: USERS.alice,
      actionId: HOME_ACTION.upgradeTalos,
      blockId: 'home-actions-staging',
      value: 'production',
    });
    const upgradeRefusal = await nextEphemeral(CHANNELS.production, USERS.alice, told + 1, 'the refusal of the form');
    await waitForSettled(h);

    // Assert
    expect(gateRefusal).toBe(`Only operators of *production* may use \`/talos health\`: <@${USERS.bob}>. Nothing changed.`);
    expect(upgradeRefusal).toContain(`<@${USERS.bob}>`);
    expect(h.slack.channelMessages(CHANNELS.production)).toHaveLength(posted);
    expect(h.sim.calls.length).toBe(calls);
    expect(h.slack.modals(USERS.alice)).toHaveLength(modals);
  });
});
