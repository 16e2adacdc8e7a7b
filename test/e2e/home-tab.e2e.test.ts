import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject, PublishedView } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { clickStart, requestUpgrade, waitForApprovalRequest } from '../support/upgrade-flow.ts';

// The bot's Home tab against the real Bolt app, Redis, the Slack emulator (which grants exactly
// the manifest's scopes) and the simulated estate.

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.stop();
});

function text(view: JsonObject | undefined): string {
  return JSON.stringify(view?.blocks ?? []);
}

/** The first Home published for `user` after the `since`-th one that satisfies `test`. */
function homeAfter(since: number, user: string, test: (shown: string) => boolean, description: string): Promise<PublishedView> {
  return h.slack.waitFor(
    () =>
      h.slack
        .publishedViews(user)
        .slice(since)
        .find((p) => test(text(p.view))),
    { timeoutMs: 30_000, description },
  );
}

describe('the Home tab', () => {
  it('shows both clusters when opened, then the verdict of a health gate, then the lock holder of an upgrade with a link to its thread', async () => {
    // Act: Carol opens the bot's Home.
    const opened = await h.slack.openHome(USERS.carol);
    const first = await homeAfter(0, USERS.carol, (shown) => shown.includes('*production*'), 'the Home drawn on opening');

    // Assert
    expect(opened.timedOut).toBe(false);
    expect(text(first.view)).toContain(`*production* · production · <#${CHANNELS.production}>`);
    expect(text(first.view)).toContain(`*staging* · staging · <#${CHANNELS.staging}>`);
    expect(text(first.view)).toContain('_none recorded_');
    expect(h.slack.callsTo('views.publish').every((c) => c.ok === true)).toBe(true);

    // Act: a health gate on production.
    const beforeGate = h.slack.publishedViews(USERS.carol).length;
    await h.command('health');
    const gated = await homeAfter(beforeGate, USERS.carol, (shown) => shown.includes('✅ passed'), 'the Home with the gate verdict');

    // Assert: the verdict with its time as a date token, and the versions the gate read.
    expect(text(gated.view)).toMatch(
      /\*Last health gate\*\\n✅ passed <!date\^\d+\^\{date_short_pretty\} \{time\}\|\d{4}-\d\d-\d\d \d\d:\d\d UTC>/,
    );
    expect(text(gated.view)).toContain('*Talos*\\nv1.11.6\\n_health gate, <!date^');
    expect(text(gated.view)).toContain('*Kubernetes*\\nv1.34.1\\n_health gate, <!date^');

    // Act: Alice plans and starts a Talos upgrade of production.
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11');
    const beforeStart = h.slack.publishedViews(USERS.carol).length;
    await clickStart(h, plan);
    const locked = await homeAfter(
      beforeStart,
      USERS.carol,
      (shown) => shown.includes(`\`${plan.opId}\``),
      'the Home with the lock holder',
    );

    // Assert: the holder, linked to the operation's thread in Slack's permalink form.
    const permalink = `https://talos-test.slack.com/archives/${CHANNELS.production}/p${plan.root.ts.replace('.', '')}`;
    expect(text(locked.view)).toContain(`:lock: <${permalink}|\`${plan.opId}\`> Talos upgrade to v1.12.11`);
    expect(text(locked.view)).toContain(`by <@${USERS.alice}>`);

    // Act: the upgrade reaches its first control plane and asks for an approval.
    const request = await waitForApprovalRequest(h, plan);
    // The request is drawn once it is in Slack with its link; an earlier redraw (the request stored, not yet posted) shows it unlinked.
    const requestLink = `<https://talos-test.slack.com/archives/${CHANNELS.production}/p${request.ts.replace('.', '')}`;
    const asking = await homeAfter(
      0,
      USERS.carol,
      (shown) => shown.includes('Approvals waiting') && shown.includes(requestLink),
      'the Home with the approval waiting',
    );

    // Assert
    expect(text(asking.view)).toContain(requestLink);
    expect(text(asking.view)).toMatch(/expires <!date\^\d+\^/);
    expect(h.slack.callsTo('views.publish').every((c) => c.ok === true)).toBe(true);
    expect(h.slack.apiCalls.filter((c) => c.error === 'missing_scope')).toEqual([]);
  });

  it('is drawn only for users who opened it', () => {
    expect(h.slack.publishedViews().every((p) => p.user === USERS.carol)).toBe(true);
  });
});

describe("a cluster's detail on the Home tab", () => {
  /** The Home published for `user` after their `since`-th one. */
  const opened = async (user: string, description: string): Promise<string> => {
    const since = h.slack.publishedViews(user).length;
    const result = await h.slack.openHome(user);
    expect(result.timedOut).toBe(false);
    return text((await homeAfter(since, user, (shown) => shown.includes('*production*'), description)).view);
  };

  it("is withheld when Slack cannot say who is in the cluster's channel, and that is logged", async () => {
    // Arrange: production's gate failed with its stop reasons; the app runs without the scopes to read channel members
    // (an installation from an older manifest); Frank, in the channel, neither operates nor approves.
    h.sim.faults.set('production', { fluxStalled: ['apps'] });
    const beforeGate = h.slack.publishedViews(USERS.carol).length;
    await h.command('health');
    await homeAfter(beforeGate, USERS.carol, (shown) => shown.includes('❌ failed'), 'the failed gate on an approver’s Home');
    h.sim.faults.clear('production', 'fluxStalled');
    const granted = h.slack.scopes;
    h.slack.setScopes(granted.filter((s) => s !== 'channels:read' && s !== 'groups:read'));

    // Act
    const shown = await opened(USERS.frank, "Frank's Home without the members' scopes");
    h.slack.setScopes(granted);

    // Assert
    expect(shown).toContain(`*production* (<#${CHANNELS.production}>) — `);
    expect(shown).not.toContain('❌ failed');
    expect(shown).not.toContain('v1.11.6');
    expect(h.slack.callsTo('conversations.members').map((c) => c.error)).toContain('missing_scope');
    expect(h.bot.logLines()).toContainEqual(
      expect.objectContaining({ level: 40, user: USERS.frank, cluster: 'production', channel: CHANNELS.production }),
    );
  });

  it('is shown to a member of its channel, and someone outside it sees only what `/talos status` shows there', async () => {
    // Arrange: Eve is not in production's channel; Frank is. Production's lock is held, its last gate failed.
    h.slack.setChannelMembers(CHANNELS.production, [USERS.alice, USERS.bob, USERS.carol, USERS.dave, USERS.frank]);
    const approver = text(h.slack.publishedViews(USERS.carol).at(-1)?.view);
    const holder = /:lock: <[^|]+\|`(op-[0-9a-f]+)`>/.exec(approver)?.[1];
    expect(holder).toBeDefined();
    expect(approver).toContain('❌ failed');

    // Act
    const eve = await opened(USERS.eve, "Eve's Home");
    const frank = await opened(USERS.frank, "Frank's Home");

    // Assert: Frank, a member, sees production as an approver does: versions, the holder, approvals, the gate's reasons.
    expect(frank).toContain(`*production* · production · <#${CHANNELS.production}>`);
    expect(frank).toContain('*Talos*\\nv1.11.6');
    expect(frank).toContain(`by <@${USERS.alice}>`);
    expect(frank).toContain('Approvals waiting');
    expect(frank).toContain('❌ failed');
    expect(frank).toContain('apps');
    // Eve: which operation holds production and where its channel is, nothing more of it.
    expect(eve).toMatch(new RegExp(`\\*production\\* \\(<#${CHANNELS.production}>\\) — held by <[^|]+\\|${holder}>`));
    for (const detail of [
      'v1.11.6',
      'v1.12.11',
      'v1.34.1',
      `<@${USERS.alice}>`,
      'Talos upgrade',
      'Approvals waiting',
      '❌ failed',
      'apps',
    ]) {
      expect(eve).not.toContain(detail);
    }
    expect(h.slack.callsTo('views.publish').every((c) => c.ok === true)).toBe(true);
  });
});
