import { afterEach, describe, expect, it } from 'vitest';
import { checkText, runGate } from '../support/gate-run.ts';
import { CHANNELS, startHarness, USERS, type Harness, type HarnessOptions } from '../support/harness.ts';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.ts';
import { storedOperation } from '../support/stored-operation.ts';
import {
  approve,
  approveUntilDone,
  clickStart,
  opIdOf,
  requestUpgrade,
  tickAll,
  waitForApprovalRequest,
  waitForRootState,
  type Plan,
} from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
const ESTATE_TITLE = 'Nodes by every source';
let h: Harness | undefined;

async function harness(options: HarnessOptions): Promise<Harness> {
  h = await startHarness(options);
  return h;
}

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** How many gates ended with check `id` in `status`, from the bot's own metrics. */
async function checkCount(bot: Harness, id: string, status: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${bot.httpPort}/metrics`);
  return sampleValue(parsePrometheusText(await response.text()), 'talos_chatops_health_checks_total', { check: id, status }) ?? 0;
}

function upgradedNodes(bot: Harness, cluster: string, since: number): string[] {
  return bot.sim.calls
    .slice(since)
    .filter((c) => c.bin === 'talosctl' && c.cluster === cluster && c.argv[0] === 'upgrade')
    .map((c) => c.argv[c.argv.indexOf('--nodes') + 1]!);
}

/** A command whose operation starts with its request (a removal): its root message once it names the node. */
async function requestRemoval(bot: Harness, text: string, channel: string): Promise<Plan> {
  const ack = await bot.command(text, { channel });
  const opId = opIdOf(ack);
  const root = await bot.slack.waitFor(
    () => bot.slack.channelMessages(channel).find((m) => m.text.includes(opId) && /Removal of/.test(m.text)),
    {
      timeoutMs: 30_000,
      description: `the plan of ${opId}`,
    },
  );
  return { opId, root, ack };
}

/** `/talos plan` in `channel`, then an approver's Apply, to its end. */
async function applyReviewedPlan(bot: Harness, channel: string): Promise<Plan> {
  const plan = await requestUpgrade(bot, 'plan', { channel });
  await waitForRootState(bot, plan, /waiting for an approver's Apply/, channel);
  // The approver compared the boot ISO's sha256 with the uploaded file, as the plan asks when it adds a VM or moves talos_version.
  const ticks = tickAll(bot, channel, plan.root.ts);
  await bot.slack.clickButton({ user: USERS.carol, channel, messageTs: plan.root.ts, actionId: 'talos-op-start', ticks });
  await waitForRootState(bot, plan, /completed|stopped|failed/, channel, 120_000);
  return plan;
}

describe('a control plane etcd and Kubernetes know but the inventory does not', () => {
  it('is named by the gate, and an upgrade refuses while the inventory leaves it out', async () => {
    // Arrange: the operator's inventory lists two of the three control planes the cluster runs.
    const bot = await harness({
      inventory: {
        extra: {
          production: {
            controlPlanes: ['10.0.30.11', '10.0.30.12'],
            nodeNames: { '10.0.30.11': 'talos-prd-cp-1', '10.0.30.12': 'talos-prd-cp-2' },
          },
        },
      },
    });
    const since = bot.sim.calls.length;

    // Act
    const gate = await runGate(bot);
    const plan = await requestUpgrade(bot, `upgrade talos ${TARGET}`);

    // Assert: the gate's estate check fails and names the node and the fix.
    expect(gate.root.text).toContain('Health gate failed');
    expect(await checkCount(bot, 'estate', 'failed')).toBe(1);
    const said = checkText(gate, ESTATE_TITLE);
    expect(said).toContain(
      "talos-prd-cp-3 (10.0.30.13) is a control plane to etcd and Kubernetes, but the inventory's controlPlanes does not list it",
    );
    expect(said).toContain('add 10.0.30.13 to controlPlanes in the inventory, or leave the node lists out');
    // The upgrade is refused for it, in the stored refusal, and nothing was upgraded.
    expect(plan.root.text).toContain('refused');
    const op = await storedOperation(bot, plan.opId);
    expect(op.state).toBe('refused');
    expect(op.refusals).toContainEqual(
      expect.stringContaining(
        "the sources disagree on the nodes: talos-prd-cp-3 (10.0.30.13) is a control plane to etcd and Kubernetes, but the inventory's controlPlanes does not list it",
      ),
    );
    expect(upgradedNodes(bot, 'production', since)).toEqual([]);
  }, 120_000);

  it('is walked by the upgrade when the inventory lists no nodes', async () => {
    // Arrange: production's entry names no node; the bot finds the three control planes itself.
    const bot = await harness({ inventory: { withoutNodeLists: ['production'] } });
    const since = bot.sim.calls.length;

    // Act
    const gate = await runGate(bot);
    const plan = await requestUpgrade(bot, `upgrade talos ${TARGET}`);
    await clickStart(bot, plan);
    const done = await approveUntilDone(bot, plan);

    // Assert
    expect(gate.root.text).toContain('Health gate passed');
    expect(await checkCount(bot, 'estate', 'passed')).toBe(1);
    expect(checkText(gate, ESTATE_TITLE)).toContain('every source agrees: 3 control planes, 0 workers');
    expect(done.text).toContain('completed');
    expect(upgradedNodes(bot, 'production', since)).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    expect(bot.sim.cluster('production').nodes.map((n) => n.talosVersion)).toEqual([TARGET, TARGET, TARGET]);
  }, 180_000);
});

describe('nodes added and removed with no inventory edit', () => {
  it('walks a worker a reviewed apply added in the next upgrade, and once removed it fails the gate only until Terraform forgets it', async () => {
    // Arrange: staging's entry names no node (one control plane and one worker today).
    const bot = await harness({ inventory: { withoutNodeLists: ['staging'] } });
    await bot.sim.terraform.addNode('staging', { hostname: 'talos-stg-w-2', address: '10.0.20.22', role: 'worker', host: 'pve1' });
    await bot.sim.terraform.commit('add talos-stg-w-2');

    // Act: the reviewed apply adds the worker; the next upgrade follows, with no inventory edit between.
    const added = await applyReviewedPlan(bot, CHANNELS.staging);
    const since = bot.sim.calls.length;
    const upgrade = await requestUpgrade(bot, `upgrade talos ${TARGET}`, { channel: CHANNELS.staging });
    await clickStart(bot, upgrade, USERS.alice, CHANNELS.staging);
    const upgraded = await approveUntilDone(bot, upgrade, CHANNELS.staging);

    // Assert: the apply completed and asks for no inventory edit; the upgrade walked the new worker too.
    const addedThread = bot.slack
      .thread(CHANNELS.staging, added.root.ts)
      .map((m) => m.text)
      .join('\n');
    expect(bot.slack.message(CHANNELS.staging, added.root.ts)?.text).toContain('completed');
    expect(addedThread).toContain("Nothing to edit in this bot's inventory: the next operation includes it.");
    expect(upgraded.text).toContain('completed');
    expect(upgradedNodes(bot, 'staging', since).sort()).toEqual(['10.0.20.204', '10.0.20.205', '10.0.20.22']);

    // Act: the worker is removed; then Terraform forgets it through a reviewed apply.
    const removal = await requestRemoval(bot, 'remove 10.0.20.22', CHANNELS.staging);
    await approve(bot, await waitForApprovalRequest(bot, removal, CHANNELS.staging), USERS.carol, CHANNELS.staging);
    const removed = await waitForRootState(bot, removal, /completed|stopped/, CHANNELS.staging, 90_000);
    const between = await runGate(bot, CHANNELS.staging);
    // The same commit brings talos_version in line with what runs since the upgrade, as the runbook's follow-up asks.
    await bot.sim.terraform.removeNode('staging', 'talos-stg-w-2');
    await bot.sim.terraform.setTalosVersion('staging', TARGET);
    await bot.sim.terraform.commit('remove talos-stg-w-2; talos_version follows the upgrade');
    const forgotten = await applyReviewedPlan(bot, CHANNELS.staging);
    const after = await runGate(bot, CHANNELS.staging);

    // Assert: no edit asked after the removal; the gate names the VM Terraform still has, then passes once it is gone.
    expect(removed.text).toContain('completed');
    const removalThread = bot.slack
      .thread(CHANNELS.staging, removal.root.ts)
      .map((m) => m.text)
      .join('\n');
    expect(removalThread).toContain("Nothing to edit in this bot's inventory: the next operation finds staging without 10.0.20.22.");
    expect(between.root.text).toContain('Health gate failed');
    expect(checkText(between, ESTATE_TITLE)).toContain(
      'Terraform\'s state has proxmox_virtual_environment_vm.talos[\\"talos-stg-w-2\\"], but neither Kubernetes nor etcd knows a node talos-stg-w-2',
    );
    expect(bot.slack.message(CHANNELS.staging, forgotten.root.ts)?.text).toContain('completed');
    expect(after.root.text).toContain('Health gate passed');
    expect(checkText(after, ESTATE_TITLE)).toContain('every source agrees: 1 control plane, 1 worker');
  }, 480_000);
});
