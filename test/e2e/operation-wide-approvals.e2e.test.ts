import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { approve, auditLines, clickStart, requestUpgrade, waitForApprovalRequest, waitForRootState } from '../support/upgrade-flow.ts';

// `approvalScope: operation` as Slack sees it: the one approval covers later steps only while the person's decision
// is younger than the approval age bound, and never a `tofu apply`, whose approver sees the saved plan.

const TARGET = 'v1.12.11';
let h: Harness;

afterEach(async () => {
  await h?.stop();
});

const approveButton = (m: Message | undefined): boolean => JSON.stringify(m?.blocks ?? []).includes('"action_id":"talos-step-approve"');
const requests = (plan: { root: Message }): Message[] =>
  h.slack.thread(CHANNELS.production, plan.root.ts).filter((m) => h.slack.versions(CHANNELS.production, m.ts)[0]!.text.startsWith('🔐 '));
const tofuApplies = () => h.sim.calls.filter((c) => c.bin === 'tofu' && c.cluster === 'production' && c.argv[0] === 'apply');

describe('an operation-wide approval', () => {
  it('older than the approval age bound when the next control plane comes is asked again, across a restart', async () => {
    // Arrange: one approval for the three control planes (the bound is APPROVAL_TTL_MINUTES, 30 min).
    h = await startHarness({ inventory: { extra: { production: { approvalScope: 'operation' } } } });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    await approve(h, await waitForApprovalRequest(h, plan));
    await h.slack.waitFor(() => h.sim.events.find((e) => e.kind === 'upgrade-start' && e.node === '10.0.30.11'), {
      timeoutMs: 30_000,
      description: 'the upgrade of the first control plane',
    });

    // Act: SIGTERM lets cp-1's step finish and puts the run back in the queue; the bot comes back 31 minutes later by its clock.
    expect(await h.bot.stop()).toBe(0);
    expect(h.sim.upgradeCount('production', '10.0.30.12')).toBe(0);
    const later = await h.secondBot({
      NODE_OPTIONS: `--import ${fileURLToPath(new URL('../support/clock-shift.ts', import.meta.url))}`,
      TEST_CLOCK_SHIFT_MINUTES: '31',
    });
    await later.start();
    await h.slack.waitForConnections(1);
    // Either cp-2 asks again, or (the decision renewed or never aged) its upgrade starts on the old decision.
    const outcome = await h.slack.waitFor(
      () =>
        requests(plan).length === 2 && approveButton(h.slack.message(CHANNELS.production, requests(plan)[1]!.ts))
          ? 'asked again'
          : h.sim.upgradeCount('production', '10.0.30.12') > 0
            ? 'covered'
            : undefined,
      { timeoutMs: 90_000, description: 'cp-2 asked again, or upgraded on the old approval' },
    );

    // Assert
    expect(outcome).toBe('asked again');
    expect(h.sim.upgradeCount('production', '10.0.30.12')).toBe(0);
    const again = h.slack.versions(CHANNELS.production, requests(plan)[1]!.ts)[0]!;
    expect(again.text).toMatch(/^🔐 production · control plane 2 of 3 · approve talos-prd-cp-2 → Talos v1\.12\.11\?/);
    expect(
      auditLines(h, plan).some((l) =>
        /^#\d+ operation-wide approval too old for 10\.0\.30\.12: given by <@U0CAROL> at \S+ for node-10\.0\.30\.11, more than 30 min ago/.test(
          l,
        ),
      ),
    ).toBe(true);
    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('awaiting-approval');
    expect(op.approvals.map((a) => [a.step, a.state, a.coveredBy !== undefined])).toEqual([
      [op.approvals[0]!.step, 'approved', false],
      [op.approvals[1]!.step, 'pending', false],
    ]);
    expect(op.approvals[1]!.step).not.toBe(op.approvals[0]!.step);
  }, 180_000);

  it('of the member removal never covers the replacement’s tofu apply: its approver is asked with the saved plan', async () => {
    // Arrange
    h = await startHarness({ etcd: 'real', inventory: { extra: { production: { approvalScope: 'operation' } } } });
    h.sim.failMachine('production', 'talos-prd-cp-2');
    await h.sim.etcdSettled('production');
    const plan = await requestUpgrade(h, 'replace talos-prd-cp-2');
    await clickStart(h, plan, USERS.alice);
    const removal = await h.slack.waitFor(
      () => requests(plan).find((m) => /remove the etcd member of talos-prd-cp-2/.test(m.text) && approveButton(m)),
      { timeoutMs: 90_000, description: 'the approval request of the member removal' },
    );

    // Act
    await approve(h, removal, USERS.carol);
    const outcome = await h.slack.waitFor(
      () => {
        const apply = requests(plan).find(
          (m) => /tofu apply: replace the VM of talos-prd-cp-2/.test(m.text) && approveButton(h.slack.message(CHANNELS.production, m.ts)),
        );
        if (apply !== undefined) return { apply };
        return tofuApplies().length > 0 ? { applied: true } : undefined;
      },
      { timeoutMs: 120_000, description: 'the apply asked for, or applied on the removal’s approval' },
    );

    // Assert: asked, with the plan on its card, and nothing applied before the click.
    expect(outcome.apply).toBeDefined();
    expect(tofuApplies()).toHaveLength(0);
    expect(JSON.stringify(outcome.apply!.blocks)).toMatch(/sha256 `[0-9a-f]{12}…`/);
    expect(auditLines(h, plan).some((l) => /covered by the approval/.test(l))).toBe(false);
    await approve(h, outcome.apply!, USERS.carol);
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.production, 180_000);
    expect(done.text).toContain('completed');
    expect(tofuApplies()).toHaveLength(1);
    const op = await storedOperation(h, plan.opId);
    const apply = op.approvals.filter((a) => op.steps.find((s) => s.id === a.step)?.kind === 'tofu-apply');
    expect(apply.map((a) => [a.state, a.by, a.scope, a.coveredBy])).toEqual([['approved', USERS.carol, undefined, undefined]]);
  }, 300_000);
});
