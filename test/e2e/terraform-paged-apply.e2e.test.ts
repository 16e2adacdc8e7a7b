import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { requestUpgrade, waitForRootState, type Plan } from '../support/upgrade-flow.ts';

// The Terraform Apply where the approver is paged: Apply and Reject on the message that pages them, that message
// edited to its outcome, and a plan that says first what applying it does to the nodes, then the diff.

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 120_000);

afterAll(async () => {
  await h?.stop();
});

const APPLY = 'talos-op-start';
const REJECT = 'talos-op-cancel';

function buttonsOf(message: Message | undefined): string[] {
  return [...JSON.stringify(message?.blocks ?? []).matchAll(/"action_id":"([^"]+)"/g)].map((m) => m[1]!);
}

/** The thread reply that pages the approvers, as it stands now. */
async function pagedMessage(p: Plan): Promise<Message> {
  const found = await h.slack.waitFor(
    () => h.slack.thread(CHANNELS.staging, p.root.ts).find((m) => /apply offered to approvers/.test(m.text)),
    { description: `the message paging the approvers of ${p.opId}` },
  );
  return h.slack.message(CHANNELS.staging, found.ts) ?? found;
}

function applies(): unknown[] {
  return h.sim.calls.filter((c) => c.bin === 'tofu' && c.cluster === 'staging' && c.argv[0] === 'apply');
}

describe('the paged message carries Apply and Reject and is edited to the outcome', () => {
  it('applies from the paged message, which then says who applied it, when, and that the gate passed', async () => {
    // Arrange: a routine patch on the single-control-plane staging.
    await h.sim.terraform.changePatch('staging');
    await h.sim.terraform.commit('a sysctl patch');

    // Act
    const p = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    const planned = await waitForRootState(h, p, /waiting for an approver's Apply/, CHANNELS.staging);
    const paged = await pagedMessage(p);
    await h.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: paged.ts, actionId: APPLY });
    const done = await waitForRootState(h, p, /completed|stopped|cancelled/, CHANNELS.staging, 90_000);
    await waitForSettled(h);
    const after = h.slack.message(CHANNELS.staging, paged.ts);

    // Assert: the plan leads with what applying it does, the only control plane's outage first, then the diff.
    const plan = JSON.stringify(planned.blocks);
    const effect = plan.indexOf('⚠ Only control plane: the Kubernetes API and etcd are down while talos-stg-cp-1 reboots');
    expect(effect).toBeGreaterThan(-1);
    expect(plan).toContain('applies configuration to 1 control plane (talos-stg-cp-1); may reboot it');
    expect(plan).toContain('applies configuration to 1 worker (talos-stg-w-1); may reboot it');
    expect(plan).toContain('~ config_patch_revision: 1 → 2');
    expect(effect).toBeLessThan(plan.indexOf('config_patch_revision'));
    // The paged message: the approvers mentioned, the effect, Apply and Reject on it.
    expect(paged.text).toContain(`<@${USERS.carol}>`);
    expect(JSON.stringify(paged.blocks)).toContain('⚠ Only control plane');
    expect(buttonsOf(paged)).toEqual([APPLY, REJECT]);
    // The click on it applied exactly once, as carol's Apply; the message now says so, without buttons.
    expect(done.text).toContain('completed');
    expect(applies()).toHaveLength(1);
    const op = await storedOperation(h, p.opId);
    expect(op?.startedBy).toBe(USERS.carol);
    expect(op?.audit.some((e) => e.event === 'applied' && e.actor === USERS.carol)).toBe(true);
    expect(buttonsOf(after)).toEqual([]);
    expect(after?.text).toMatch(/^✅ Applied by <@U0CAROL> .*\d\d:\d\d UTC · gate passed/);
    expect(JSON.stringify(after?.blocks)).toMatch(/✅ Applied by <@U0CAROL> <!date\^\d+\^/);
  }, 180_000);

  it('applies from the paged message clicked before Slack told the bot where it posted it', async () => {
    // Arrange: Slack shows the paging reply at once and holds its answer to the bot, as a slow answer would.
    await h.sim.terraform.changePatch('staging');
    await h.sim.terraform.commit('a second sysctl patch');
    const before = applies().length;
    const answer = h.slack.faults.holdAnswer({
      methods: ['chat.postMessage'],
      where: (args) => typeof args.text === 'string' && args.text.includes('apply offered to approvers'),
    });

    // Act: carol clicks Apply on it while the bot has not stored it yet; then Slack's answer arrives.
    const p = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    const paged = await pagedMessage(p);
    await h.slack.waitFor(() => answer.waiting === 1 || undefined, { description: "the paging reply's answer held" });
    const click = await h.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: paged.ts, actionId: APPLY });
    answer.release();
    const done = await waitForRootState(h, p, /completed|stopped|cancelled/, CHANNELS.staging, 90_000);
    await waitForSettled(h);

    // Assert: the early click counted, once, as carol's Apply; nobody was told it came from a copy.
    expect(click.timedOut).toBe(false);
    expect(done.text).toContain('completed');
    expect(applies()).toHaveLength(before + 1);
    const op = await storedOperation(h, p.opId);
    expect(op?.startedBy).toBe(USERS.carol);
    expect(op?.audit.filter((e) => e.event === 'applied' && e.actor === USERS.carol)).toHaveLength(1);
    expect(JSON.stringify(h.slack.ephemerals(CHANNELS.staging, USERS.carol))).not.toContain('not the one the bot keeps');
  }, 180_000);

  it('rejects from the paged message: nothing is applied, and the message says who rejected it', async () => {
    // Arrange
    await h.sim.terraform.changePatch('staging');
    await h.sim.terraform.commit('a patch the approver rejects');
    const before = applies().length;

    // Act
    const p = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    await waitForRootState(h, p, /waiting for an approver's Apply/, CHANNELS.staging);
    const paged = await pagedMessage(p);
    await h.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: paged.ts, actionId: REJECT });
    await waitForRootState(h, p, /cancelled/, CHANNELS.staging);
    const after = await h.slack.waitFor(
      () => {
        const m = h.slack.message(CHANNELS.staging, paged.ts);
        return m !== undefined && /Rejected/.test(m.text) ? m : undefined;
      },
      { description: 'the paged message edited to the rejection' },
    );
    await waitForSettled(h);

    // Assert
    expect(applies()).toHaveLength(before);
    expect((await storedOperation(h, p.opId))?.state).toBe('cancelled');
    expect(buttonsOf(after)).toEqual([]);
    expect(after.text).toMatch(/^✖ Rejected by <@U0CAROL> .* · nothing was applied/);
  }, 120_000);

  it('names a sensitive attribute the plan changes and never shows its value', async () => {
    // Arrange: new cluster secrets (a migration the bot refuses, but whose plan it still shows).
    await h.sim.terraform.replaceSecrets('staging');
    await h.sim.terraform.commit('new secrets');

    // Act
    const p = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    const refused = await waitForRootState(h, p, /refused/, CHANNELS.staging);
    await h.sim.terraform.declare('staging', (inputs) => {
      inputs.talos_secrets_generation -= 1;
    });
    await h.sim.terraform.commit('keep the secrets');

    // Assert
    const shown = JSON.stringify(refused.blocks);
    expect(shown).toContain('talos_machine_secrets.this');
    expect(shown).toContain('~ machine_secrets: (sensitive value)');
    expect(shown).toContain('~ generation: 1 → 2 # forces replacement');
    const channel = [...h.slack.channelMessages(CHANNELS.staging), ...h.slack.thread(CHANNELS.staging, p.root.ts)];
    expect(JSON.stringify(channel)).not.toContain(h.sim.secretsCanary);
  }, 120_000);
});
