import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { requestUpgrade, tickAll, waitForRootState, type Plan } from '../support/upgrade-flow.ts';
import { terraformData } from '../../jobs/playbooks/terraform-apply/data.ts';

// The versions Terraform declares, read from the plan's variables, against what every node runs:
// a plan that takes Kubernetes back is refused with both versions, and the Apply asks the cluster again.

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 120_000);

afterAll(async () => {
  await h?.stop();
});

const APPLY = 'talos-op-start';

/** The follow-up plan the first test of the follow-up offers, which the next one applies. */
let followUpPlan: { plan: Plan; commit: string } | undefined;

function hasButton(message: Message | undefined, actionId: string): boolean {
  return JSON.stringify(message?.blocks ?? []).includes(`"action_id":"${actionId}"`);
}

function applies(cluster: string) {
  return h.sim.calls.filter((c) => c.bin === 'tofu' && c.cluster === cluster && c.argv[0] === 'apply');
}

describe('a plan that declares a version below what runs', () => {
  it('is refused when it lowers talos_kubernetes_version below what every kubelet runs, naming both versions and the change that fixes it', async () => {
    // Arrange: staging's kubelets run v1.34.1; the commit declares v1.33.5.
    await h.sim.terraform.setKubernetesVersion('staging', 'v1.33.5');
    await h.sim.terraform.commit('staging: talos_kubernetes_version v1.33.5');
    const before = applies('staging').length;

    // Act
    const p = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    const refused = await waitForRootState(h, p, /refused/, CHANNELS.staging);
    await waitForSettled(h);
    await h.sim.terraform.setKubernetesVersion('staging', 'v1.34.1');
    await h.sim.terraform.commit('staging: talos_kubernetes_version back to v1.34.1');

    // Assert
    const op = await storedOperation(h, p.opId);
    expect(op.state).toBe('refused');
    expect(op.refusals).toContainEqual(
      expect.stringContaining(
        'the plan declares Kubernetes v1.33.5 (variable talos_kubernetes_version), below what runs (talos-stg-cp-1 runs v1.34.1',
      ),
    );
    expect(op.refusals.join('\n')).toContain('`talos_kubernetes_version = "v1.34.1"`');
    expect(JSON.stringify(refused.blocks)).toContain('v1.33.5');
    expect(hasButton(refused, APPLY)).toBe(false);
    expect(applies('staging')).toHaveLength(before);
  }, 90_000);
});

describe('the Apply click', () => {
  it('asks the cluster again: a plan offered while every node ran the declared version is refused once a kubelet moved past it, and nothing is applied', async () => {
    // Arrange: a routine change, offered for Apply while every node runs what Terraform declares.
    await h.sim.terraform.changePatch('staging');
    await h.sim.terraform.commit('staging: a sysctl patch');
    const p = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    const planned = await waitForRootState(h, p, /waiting for an approver's Apply/, CHANNELS.staging);
    expect(hasButton(planned, APPLY)).toBe(true);
    // Then one kubelet moves to a newer Kubernetes than the plan declares.
    const node = h.sim.cluster('staging').nodes[0]!;
    const kubelet = node.kubeletVersion;
    node.kubeletVersion = 'v1.35.0';
    const before = applies('staging').length;

    // Act
    await h.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: p.root.ts, actionId: APPLY });
    const refusal = await h.slack.waitFor(
      () => h.slack.ephemerals(CHANNELS.staging, USERS.carol).find((e) => /no longer allows/.test(e.text)),
      { description: 'the refused Apply' },
    );
    node.kubeletVersion = kubelet;
    await waitForSettled(h);

    // Assert
    expect(refusal.text).toContain(
      `the plan declares Kubernetes v1.34.1 (variable talos_kubernetes_version), below what runs (${node.hostname} runs v1.35.0)`,
    );
    expect(refusal.text).toContain('Nothing changed.');
    const op = await storedOperation(h, p.opId);
    expect(op.state).toBe('planned');
    expect(op.audit.some((e) => e.event === 'applied')).toBe(false);
    expect(applies('staging')).toHaveLength(before);
  }, 90_000);
});

describe('the Terraform follow-up of a Kubernetes upgrade', () => {
  it('names the exact Terraform change, and the plan that makes it is recognised as the follow-up and offered, declaring exactly what runs', async () => {
    // Arrange: staging upgrades Kubernetes to 1.34.2 through Slack.
    const upgrade = await requestUpgrade(h, 'upgrade k8s 1.34.2', { channel: CHANNELS.staging });
    await h.slack.clickButton({ user: USERS.alice, channel: CHANNELS.staging, messageTs: upgrade.root.ts, actionId: APPLY });
    const request = await h.slack.waitFor(
      () =>
        h.slack
          .thread(CHANNELS.staging, upgrade.root.ts)
          .find((m) => JSON.stringify(h.slack.message(CHANNELS.staging, m.ts)?.blocks ?? []).includes('"action_id":"talos-k8s-apply"')),
      { timeoutMs: 30_000, description: 'the apply request' },
    );
    await h.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: request.ts, actionId: 'talos-k8s-apply' });
    await waitForRootState(h, upgrade, /completed/, CHANNELS.staging, 90_000);
    const followUp = await h.slack.waitFor(
      () => h.slack.thread(CHANNELS.staging, upgrade.root.ts).find((m) => m.text.includes('Terraform follow-up')),
      { timeoutMs: 30_000, description: 'the follow-up' },
    );
    await waitForSettled(h);

    // Act: the change the follow-up names, committed and planned.
    await h.sim.terraform.setKubernetesVersion('staging', 'v1.34.2');
    await h.sim.terraform.commit('staging: talos_kubernetes_version v1.34.2');
    const p = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    const planned = await waitForRootState(h, p, /waiting for an approver's Apply|refused/, CHANNELS.staging);
    await waitForSettled(h);

    // Assert
    expect(followUp.text).toContain('Make the Terraform change `talos_kubernetes_version = "v1.34.2"` (it declares v1.34.1 now)');
    const op = await storedOperation(h, p.opId);
    expect(op.refusals).toEqual([]);
    expect(op.notes).toContainEqual(
      `This is the Terraform follow-up of the Kubernetes upgrade ${upgrade.opId}: the declared Kubernetes version moves from v1.34.1 to v1.34.2, which every node already runs.`,
    );
    expect(hasButton(planned, APPLY)).toBe(true);
    followUpPlan = { plan: p, commit: await h.sim.terraform.head() };
  }, 180_000);

  it('links the upgrade and its applied follow-up both ways: `/talos record` of the upgrade names the apply and its commit', async () => {
    // Arrange: the follow-up plan of the test above, applied by an approver who compared the ISO.
    expect(followUpPlan).toBeDefined();
    const { plan, commit } = followUpPlan as NonNullable<typeof followUpPlan>;
    const upgradeOp = (await storedOperation(h, plan.opId)).notes.join(' ').match(/Kubernetes upgrade (op-[a-z0-9]+)/)?.[1];
    expect(upgradeOp).toBeDefined();
    await h.slack.clickButton({
      user: USERS.carol,
      channel: CHANNELS.staging,
      messageTs: plan.root.ts,
      actionId: APPLY,
      ticks: tickAll(h, CHANNELS.staging, plan.root.ts),
    });
    const applied = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.staging, 90_000);
    await waitForSettled(h);

    // Act
    await h.command(`record ${upgradeOp}`, { channel: CHANNELS.staging });
    const upgrade = await storedOperation(h, upgradeOp ?? '');
    const summary = await h.slack.waitFor(
      () => h.slack.thread(CHANNELS.staging, upgrade.rootTs ?? '').find((m) => m.text.startsWith('📒 Maintenance record')),
      { description: 'the record summary' },
    );
    const record = await h.slack.waitFor(
      () =>
        h.slack
          .uploadedFiles()
          .find((f) => f.filename === `${upgradeOp}-maintenance-record.md` && f.title === `Maintenance record ${upgradeOp}`),
      { description: 'the record of the upgrade' },
    );
    const applyRecord = h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`);

    // Assert
    expect(applied.text).toContain('completed');
    expect(upgrade.terraformFollowUp).toMatchObject({ op: plan.opId, state: 'applied', commit });
    expect(terraformData(await storedOperation(h, plan.opId)).followUpOf).toEqual([
      { op: upgradeOp, kind: 'kubernetes', version: 'v1.34.2' },
    ]);
    expect(summary.text).toContain(`Terraform follow-up ${plan.opId} (commit ${commit}) applied at`);
    expect(record.content).toContain(`- Terraform follow-up ${plan.opId} (commit ${commit}) applied at`);
    expect(applyRecord?.content).toContain(`- Follow-up of ${upgradeOp} (the Kubernetes upgrade to v1.34.2)`);
  }, 180_000);
});
