import { afterEach, describe, expect, it } from 'vitest';
import { productionShape, stagingShape } from '../sim/index.ts';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness, type HarnessOptions } from '../support/harness.ts';
import { clickStart, opLink, originalButtonValue, requestUpgrade, waitForRootState, type Plan } from '../support/upgrade-flow.ts';

const APPLY = 'talos-k8s-apply';
const RETRY = 'talos-op-retry';
let h: Harness;

// A fresh estate, Redis and bot per test: upgrades change the simulated clusters for good.
async function harness(options: HarnessOptions = {}): Promise<Harness> {
  h = await startHarness(options);
  return h;
}

afterEach(async () => {
  await h?.stop();
});

function upgradeK8sCalls(since = 0) {
  return h.sim.calls.slice(since).filter((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade-k8s');
}

/** argv with the per-session talosconfig path replaced, so the rest can be compared exactly. */
function argvOf(call: { argv: string[] }): string[] {
  return call.argv.map((a, i) => (call.argv[i - 1] === '--talosconfig' ? '<talosconfig>' : a));
}

function hasButton(channel: string, message: Message, actionId: string): boolean {
  return JSON.stringify(h.slack.message(channel, message.ts)?.blocks ?? []).includes(`"action_id":"${actionId}"`);
}

async function waitForButton(plan: Plan, actionId: string, channel: string = CHANNELS.production): Promise<Message> {
  return h.slack.waitFor(() => h.slack.thread(channel, plan.root.ts).find((m) => hasButton(channel, m, actionId)), {
    timeoutMs: 30_000,
    description: `a ${actionId} button`,
  });
}

async function click(message: Message, actionId: string, user: string, channel: string = CHANNELS.production) {
  return h.slack.clickButton({ user, channel, messageTs: message.ts, actionId });
}

function kubelets(cluster: string): string[] {
  return h.sim.cluster(cluster).nodes.map((n) => n.kubeletVersion);
}

describe('Kubernetes patch upgrade of production (three control planes)', () => {
  it('is not refused by a disruption budget only a drain would meet: it drains no node, and says so', async () => {
    await harness();
    // apps/podinfo allows no disruption: a drain of the node its pod runs on would block.
    h.sim.faults.set('production', { pdbBlocked: ['podinfo'] });

    const plan = await requestUpgrade(h, 'upgrade k8s 1.34.2');
    expect(plan.root.text).toContain('planned');
    expect(JSON.stringify(plan.root.blocks)).toContain(
      'PodDisruptionBudgets (no drain judged here): this operation drains no node, so no budget holds it; PDB apps/podinfo: disruptionsAllowed=0',
    );
    await clickStart(h, plan);
    await click(await waitForButton(plan, APPLY), APPLY, USERS.carol);
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/);

    expect(done.text).toContain('completed');
    expect(kubelets('production')).toEqual(['v1.34.2', 'v1.34.2', 'v1.34.2']);
    // A Talos upgrade drains every node: the same budget refuses it.
    const talos = await requestUpgrade(h, 'upgrade talos v1.12.11');
    expect(talos.root.text).toContain('refused');
    expect(JSON.stringify(talos.root.blocks)).toMatch(/PDB apps\/podinfo: disruptionsAllowed=0 .* would block/);
  });

  it("plans, snapshots, posts the dry run as a file, applies on an approver's word and finishes with the Terraform follow-up", async () => {
    await harness();
    const plan = await requestUpgrade(h, 'upgrade k8s 1.34.2');
    expect(plan.root.text).toContain('Kubernetes upgrade 1.34.1 → 1.34.2: production');
    const planBlocks = JSON.stringify(plan.root.blocks);
    expect(planBlocks).toContain('talosctl upgrade-k8s --to 1.34.2');
    expect(planBlocks).toContain('talos_kubernetes_version');
    expect(planBlocks).toContain('v1.34.2');
    expect(upgradeK8sCalls()).toEqual([]);

    await clickStart(h, plan);
    const request = await waitForButton(plan, APPLY);
    const dryRuns = upgradeK8sCalls();
    expect(dryRuns.map(argvOf)).toEqual([
      [
        'upgrade-k8s',
        '--to',
        '1.34.2',
        '--dry-run',
        '--talosconfig',
        '<talosconfig>',
        '--endpoints',
        '10.0.30.11,10.0.30.12,10.0.30.13',
        '--nodes',
        '10.0.30.11',
      ],
    ]);
    expect(kubelets('production')).toEqual(['v1.34.1', 'v1.34.1', 'v1.34.1']);
    const dryRunFile = h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-upgrade-k8s-dry-run.txt`);
    expect(dryRunFile?.content).toContain(' > skipped in dry-run');
    expect(dryRunFile?.content.split('\n').length).toBeGreaterThan(40);
    const thread = h.slack.thread(CHANNELS.production, plan.root.ts);
    expect(thread.some((m) => m.text.includes('etcd snapshot taken'))).toBe(true);
    const dryRun = thread.find((m) => m.text.includes('📋 Dry run'))!;
    expect(dryRun.text).toContain('on 10.0.30.11: 1.34.1 → 1.34.2, 3 control plane(s), 0 worker(s)');
    expect(dryRun.text).toContain('no deprecated-API warnings');
    expect(JSON.stringify(dryRun.blocks)).toContain(`attached as \`${plan.opId}-upgrade-k8s-dry-run.txt\``);

    await click(request, APPLY, USERS.carol);
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/);
    expect(done.text).toContain('completed');
    expect(upgradeK8sCalls().slice(1).map(argvOf)).toEqual([
      [
        'upgrade-k8s',
        '--to',
        '1.34.2',
        '--talosconfig',
        '<talosconfig>',
        '--endpoints',
        '10.0.30.11,10.0.30.12,10.0.30.13',
        '--nodes',
        '10.0.30.11',
      ],
    ]);
    expect(kubelets('production')).toEqual(['v1.34.2', 'v1.34.2', 'v1.34.2']);
    expect(h.sim.events.filter((e) => e.kind === 'k8s-upgraded').map((e) => e.toVersion)).toEqual(['v1.34.2']);

    // The maintenance record is the operation's last post: the thread is complete once it is there.
    const record = await h.slack.waitFor(() => h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`));
    const after = h.slack.thread(CHANNELS.production, plan.root.ts);
    const progress = after.find((m) => /talosctl upgrade-k8s --to 1\.34\.2 on 10\.0\.30\.11 (running|finished)/.test(m.text))!;
    const progressText = JSON.stringify(h.slack.message(CHANNELS.production, progress.ts)?.blocks);
    expect(progressText).toContain('updating \\"kube-apiserver\\" to version \\"1.34.2\\"');
    expect(progressText).toContain('waiting for all manifests to be applied');
    // Dozens of output lines, but the progress message is edited only a few times.
    expect(h.slack.edits(CHANNELS.production, progress.ts).length).toBeLessThanOrEqual(3);
    expect(after.some((m) => m.text.includes('talos_kubernetes_version = "v1.34.2"') && m.text.includes('downgrades'))).toBe(true);
    expect(record.content).toContain('- Operation: Kubernetes upgrade to 1.34.2 — k8s-upgrade to 1.34.2 (from 1.34.1)');
    expect(record.content).toContain('| 3 | k8s-apply | 10.0.30.11 |');
    expect(await h.command('status')).toContain('no operation holds it');
  });
});

describe('Kubernetes minor upgrade on Talos 1.12 (staging: one control plane, one worker)', () => {
  it('accepts the version with a leading v, posts the dry run and moves every kubelet to 1.35.0', async () => {
    await harness({ clusters: [stagingShape({ talosVersion: 'v1.12.11' }), productionShape({ talosVersion: 'v1.12.11' })] });
    const plan = await requestUpgrade(h, 'upgrade k8s v1.35.0', { channel: CHANNELS.staging });
    expect(plan.root.text).toContain('Kubernetes upgrade 1.34.1 → 1.35.0: staging');
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    const request = await waitForButton(plan, APPLY, CHANNELS.staging);
    const dryRun = h.slack.thread(CHANNELS.staging, plan.root.ts).find((m) => m.text.includes('📋 Dry run'))!;
    // With the compatibility lines and the kube-proxy section talosctl always prints, even this two-node dry run
    // passes the inline limit (INLINE_OUTPUT_LINES): it is attached, and the message says so.
    const file = h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-upgrade-k8s-dry-run.txt`);
    expect(file?.content).toContain('discovered worker nodes ["10.0.20.205"]');
    expect(file?.content).toContain('updating kube-proxy to version "1.35.0"');
    expect(JSON.stringify(dryRun.blocks)).toContain(`attached as \`${plan.opId}-upgrade-k8s-dry-run.txt\``);

    await click(request, APPLY, USERS.dave, CHANNELS.staging); // approver through the S0SRE user group
    const done = await waitForRootState(h, plan, /completed|stopped/, CHANNELS.staging);
    expect(done.text).toContain('completed');
    expect(upgradeK8sCalls().map((c) => argvOf(c).slice(0, 4))).toEqual([
      ['upgrade-k8s', '--to', '1.35.0', '--dry-run'],
      ['upgrade-k8s', '--to', '1.35.0', '--talosconfig'],
    ]);
    expect(kubelets('staging')).toEqual(['v1.35.0', 'v1.35.0']);
    expect(h.sim.node('staging', '10.0.20.204').components?.apiserver).toBe('v1.35.0');
  });
});

describe('a dry run that finds APIs the target removes', () => {
  it('stops before the Apply request, lists the removed resources and says what to do; nothing is upgraded', async () => {
    // Arrange: Kubernetes 1.32 removes resource.k8s.io/v1alpha3 PodSchedulingContexts (go-kubernetes upgrade/checks.go), and staging still stores two.
    await harness({ clusters: [stagingShape({ kubernetesVersion: 'v1.31.4' }), productionShape()] });
    h.sim.faults.set('staging', { k8sStoredResources: { 'podschedulingcontexts.v1alpha3.resource.k8s.io': 2 } });

    // Act
    const plan = await requestUpgrade(h, 'upgrade k8s 1.32.0', { channel: CHANNELS.staging });
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    const stopped = await waitForRootState(h, plan, /stopped at the first failure|waiting for approval|completed/, CHANNELS.staging);
    const failure = await waitForButton(plan, RETRY, CHANNELS.staging);

    // Assert
    expect(stopped.text).toContain('stopped at the first failure');
    const shown = JSON.stringify(h.slack.message(CHANNELS.staging, failure.ts)?.blocks ?? []);
    expect(shown).toContain(
      'the cluster still stores objects in API versions that Kubernetes 1.32.0 removes (podschedulingcontexts.v1alpha3.resource.k8s.io: 2)',
    );
    expect(shown).toContain('Nothing was changed');
    expect(shown).toContain('podschedulingcontexts.v1alpha3.resource.k8s.io: 2 object(s) stored in this removed API version');
    expect(h.slack.thread(CHANNELS.staging, plan.root.ts).some((m) => hasButton(CHANNELS.staging, m, APPLY))).toBe(false);
    expect(upgradeK8sCalls().map((c) => c.argv.includes('--dry-run'))).toEqual([true]);
    expect(kubelets('staging')).toEqual(['v1.31.4', 'v1.31.4']);
  });
});

describe('refusals touch nothing and say what to do', () => {
  async function refused(text: string, expected: RegExp): Promise<void> {
    const plan = await requestUpgrade(h, text);
    expect(plan.root.text).toContain('refused');
    expect(JSON.stringify(plan.root.blocks)).toMatch(expected);
    expect(JSON.stringify(plan.root.blocks)).not.toContain('talos-op-start');
    expect(upgradeK8sCalls()).toEqual([]);
  }

  it('refuses malformed versions at once, before any job', async () => {
    await harness();
    expect(await h.command('upgrade k8s 1.34')).toContain('is not a Kubernetes version');
    expect(await h.command('upgrade k8s 1.x.2')).toContain('is not a Kubernetes version');
    expect(await h.command('upgrade k8s 1.34.2;id')).toContain('contains characters');
    expect(await h.command('upgrade k8s 1.34.2', { user: USERS.eve })).toContain('Only operators of *production*');
    expect(h.sim.calls.filter((c) => c.bin === 'talosctl')).toEqual([]);
  });

  it('refuses skipping a minor', async () => {
    await harness({ clusters: [stagingShape(), productionShape({ talosVersion: 'v1.12.11' })] });
    await refused('upgrade k8s 1.36.0', /skips a minor release: upgrade to the latest 1\.35 first/);
  });

  it("refuses a downgrade with the runbook's advice", async () => {
    await harness();
    await refused('upgrade k8s 1.33.5', /prefer fixing forward.*tested etcd recovery path/);
  });

  it('refuses a version the running Talos does not support', async () => {
    await harness();
    await refused('upgrade k8s 1.35.0', /Talos v1\.11\.6 supports Kubernetes 1\.29 to 1\.34, not 1\.35: upgrade Talos first/);
  });

  it('refuses when the health gate fails', async () => {
    await harness();
    h.sim.faults.set('production', { fluxStalled: ['apps'] });
    await refused('upgrade k8s 1.34.2', /the health gate failed/);
  });

  it('refuses while another operation holds the cluster', async () => {
    await harness();
    const first = await requestUpgrade(h, 'upgrade k8s 1.34.2');
    await clickStart(h, first);
    await waitForButton(first, APPLY);
    expect(await h.command('upgrade k8s 1.34.3')).toContain(`held by ${opLink(first)}`);
    expect(upgradeK8sCalls().filter((c) => !c.argv.includes('--dry-run'))).toEqual([]);
  });
});

describe('Apply', () => {
  it('refuses an operator or a stranger, and the four-eyes rule stops the starter from applying', async () => {
    // Two approvers besides carol, who asks: the missing staging rehearsal needs two overrides, neither by the requester.
    await harness({
      inventory: {
        operators: [USERS.alice, USERS.carol],
        approvers: [USERS.carol, 'S0SRE', USERS.frank],
        extra: { production: { requireDistinctApprover: true } },
      },
    });
    const plan = await requestUpgrade(h, 'upgrade k8s 1.34.2', { user: USERS.carol });
    await clickStart(h, plan, USERS.carol, CHANNELS.production, { overrideBy: USERS.dave, overrideThen: USERS.frank });
    const request = await waitForButton(plan, APPLY);

    await click(request, APPLY, USERS.eve);
    await click(request, APPLY, USERS.alice);
    await click(request, APPLY, USERS.carol);
    const refusals = await h.slack.waitFor(() => {
      const list = h.slack.ephemerals(CHANNELS.production).filter((e) => /^Only production's approvers can apply: |four eyes/.test(e.text));
      return list.length >= 3 ? list : undefined;
    });
    expect(refusals.map((e) => [e.user, /four eyes/.test(e.text)])).toEqual(
      expect.arrayContaining([
        [USERS.eve, false],
        [USERS.alice, false],
        [USERS.carol, true],
      ]),
    );
    expect(upgradeK8sCalls().filter((c) => !c.argv.includes('--dry-run'))).toEqual([]);
    expect(kubelets('production')).toEqual(['v1.34.1', 'v1.34.1', 'v1.34.1']);

    // Cancel opens the stop reason modal; the stop happens on its submission, here without a reason.
    await click(request, 'talos-k8s-cancel', USERS.alice);
    const modal = await h.slack.waitFor(() => h.slack.modals(USERS.alice).find((m) => m.open), { description: 'the stop reason modal' });
    await h.slack.submitView(USERS.alice, modal.viewId, {});
    await waitForRootState(h, plan, /cancelled/);
    await h.slack.waitFor(() => !JSON.stringify(h.slack.message(CHANNELS.production, request.ts)?.blocks).includes(APPLY), {
      description: 'the Apply request without its buttons',
    });
    expect(await h.command('status')).toContain('no operation holds it');
    expect(upgradeK8sCalls().filter((c) => !c.argv.includes('--dry-run'))).toEqual([]);
  });
});

describe('a failed upgrade-k8s', () => {
  it('stops with the error and a Retry button, keeps the lock, and completes when retried on a fresh approval', async () => {
    await harness();
    h.sim.faults.set('production', { upgradeK8sFailOnce: true });
    const plan = await requestUpgrade(h, 'upgrade k8s 1.34.2');
    await clickStart(h, plan);
    await click(await waitForButton(plan, APPLY), APPLY, USERS.carol);

    const failed = await waitForRootState(h, plan, /stopped at the first failure|completed/);
    expect(failed.text).toContain('stopped at the first failure');
    const failure = await waitForButton(plan, RETRY);
    expect(failure.text).toContain('failed updating service "kube-apiserver"');
    expect(failure.text).toContain('config version mismatch');
    expect(await h.command('status')).toContain(`locked by ${opLink(plan)}`);
    expect(await h.command('upgrade k8s 1.34.2')).toContain(`held by ${opLink(plan)}`);

    await click(failure, RETRY, USERS.eve);
    await h.slack.waitFor(() =>
      h.slack.ephemerals(CHANNELS.production, USERS.eve).find((e) => /Only operators and approvers/.test(e.text)),
    );
    expect(upgradeK8sCalls().filter((c) => !c.argv.includes('--dry-run'))).toHaveLength(1);

    await click(failure, RETRY, USERS.alice);
    // The approval given before the failure is spent: the retried Apply waits for an approver's word again.
    const again = await h.slack.waitFor(
      () =>
        h.slack
          .thread(CHANNELS.production, plan.root.ts)
          .filter((m) => hasButton(CHANNELS.production, m, APPLY))
          .find((m) => m.ts !== failure.ts),
      {
        timeoutMs: 30_000,
        description: 'a fresh Apply request',
      },
    );
    expect(upgradeK8sCalls().filter((c) => !c.argv.includes('--dry-run'))).toHaveLength(1);
    await click(again, APPLY, USERS.carol);
    const done = await waitForRootState(h, plan, /completed/);
    expect(done.text).toContain('completed');
    const applies = upgradeK8sCalls().filter((c) => !c.argv.includes('--dry-run'));
    expect(applies.map((c) => c.exitCode)).toEqual([1, 0]);
    expect(applies.map(argvOf)[1]).toEqual(argvOf(applies[0]!));
    expect(kubelets('production')).toEqual(['v1.34.2', 'v1.34.2', 'v1.34.2']);
    expect(h.slack.message(CHANNELS.production, failure.ts)?.text).toMatch(/Retry requested by <@U0ALICE>/);
    // The same Retry again, from a client that still shows the old message: used once, refused now.
    await h.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: failure.ts,
      actionId: RETRY,
      value: originalButtonValue(h, CHANNELS.production, failure.ts, RETRY),
    });
    await h.slack.waitFor(() => h.slack.ephemerals(CHANNELS.production, USERS.alice).find((e) => /no longer valid/.test(e.text)));
    expect(upgradeK8sCalls().filter((c) => !c.argv.includes('--dry-run'))).toHaveLength(2);
  });
});
