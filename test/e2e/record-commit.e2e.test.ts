import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { clickStart, requestUpgrade, waitForApprovalRequest, waitForRootState } from '../support/upgrade-flow.ts';

// The maintenance record names the commit of the Terraform an operation worked from, read when it
// started: here production's Terraform is the bot's own copy of the repository (`terraformRepo`).

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ managedTerraform: ['production'] });
}, 120_000);

afterAll(async () => {
  await h?.stop();
});

function recordOf(opId: string, state: string) {
  return h.slack.uploadedFiles().find((f) => f.filename === `${opId}-maintenance-record.md` && f.title.includes(state));
}

describe('the record of an operation run from a managed Terraform checkout', () => {
  it("names the checkout's commit in the record posted at the end and in `/talos record`", async () => {
    // Arrange: the commit the bot fetched into its copy when it started.
    const commit = await h.sim.terraform.head();

    // Act
    const plan = await requestUpgrade(h, 'upgrade k8s 1.34.2');
    await clickStart(h, plan);
    const request = await h.slack.waitFor(
      () =>
        h.slack
          .thread(CHANNELS.production, plan.root.ts)
          .find((m) => JSON.stringify(h.slack.message(CHANNELS.production, m.ts)?.blocks ?? []).includes('"action_id":"talos-k8s-apply"')),
      { timeoutMs: 60_000, description: 'the Apply of the Kubernetes upgrade' },
    );
    await h.slack.clickButton({ user: USERS.carol, channel: CHANNELS.production, messageTs: request.ts, actionId: 'talos-k8s-apply' });
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/);
    const ended = await h.slack.waitFor(() => recordOf(plan.opId, 'completed'), { description: 'the maintenance record' });
    await h.command(`record ${plan.opId}`);
    const summary = await h.slack.waitFor(
      () => h.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.startsWith('📒 Maintenance record')),
      { description: 'the record summary' },
    );

    // Assert
    expect(done.text).toContain('completed');
    expect(ended.content).toContain(`- Commit: ${commit}\n`);
    expect(summary.text).toContain(`commit ${commit}`);
  }, 120_000);
  it('keeps the commit in the record of an operation cancelled before it finished', async () => {
    // Arrange: a newer commit the bot has not fetched: only a plan moves its copy.
    const fetched = await h.sim.terraform.head();
    await h.sim.terraform.commit('an unrelated change nobody planned yet');
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11');
    await clickStart(h, plan);
    await waitForApprovalRequest(h, plan);

    // Act
    await h.command(`cancel ${plan.opId}`);
    const record = await h.slack.waitFor(() => recordOf(plan.opId, 'cancelled'), {
      timeoutMs: 30_000,
      description: 'the record of the cancel',
    });

    // Assert
    expect(record.content).toContain(`- Commit: ${fetched}\n`);
    expect(record.content).toContain('- Result: cancelled');
  }, 120_000);
});
