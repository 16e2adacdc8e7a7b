import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { productionShape, stagingShape } from '../sim/shapes.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { requestUpgrade, waitForRootState } from '../support/upgrade-flow.ts';

// Drift: production's nodes run Talos v1.13.9 (an upgrade whose Terraform follow-up was never made) while
// Terraform still declares v1.12.11. The gate warns, `/talos status` and the Home say it with the change
// that clears it, and the scheduled gate says when it appears and when it clears.

let h: Harness;
let redis: Redis;

beforeAll(async () => {
  // A scheduled gate every second: the test waits for its posts instead of the clock.
  h = await startHarness({
    clusters: [stagingShape(), productionShape({ talosVersion: 'v1.12.11' })],
    inventory: {
      extra: {
        production: { schedules: { healthGate: { cron: '* * * * * *' } } },
        // Staging names a Kubernetes output its Terraform does not have: that rule is off there, and says so.
        staging: { declaredVersions: { kubernetes: 'k8s_version' } },
      },
    },
  });
  redis = new Redis(h.redis.url, { maxRetriesPerRequest: null });
}, 120_000);

afterAll(async () => {
  redis?.disconnect();
  await h?.stop();
});

/** The gate's comparison as the bot keeps it for `/talos status` and the metrics. */
async function keptDeclared(): Promise<{ state: string; lines: string[]; fixes: string[] } | undefined> {
  const raw = await redis.hget('talos:signals:production', 'declared');
  return raw === null ? undefined : (JSON.parse(raw) as { state: string; lines: string[]; fixes: string[] });
}

const posts = (pattern: RegExp): string[] =>
  h.slack
    .channelMessages(CHANNELS.production)
    .map((m) => m.text)
    .filter((t) => pattern.test(t));

const DRIFT = /drifts from what Terraform declares/;
const CLEARED = /runs what Terraform declares again/;

describe('nodes on v1.13.9 while Terraform declares v1.12.11', () => {
  it('is drift in the gate, in /talos status and in the Home, announced by the scheduled gate when it appears and when it clears', async () => {
    // Arrange: the first scheduled gates see every node on the declared v1.12.11.
    await h.slack.waitFor(() => posts(/^✅ Scheduled health gate of production passes\./)[0], {
      timeoutMs: 30_000,
      description: 'the first verdict',
    });
    await h.slack.waitFor(
      async () => (Number((await redis.hget('talos:schedule:gate-runs:production', 'runs')) ?? 0) >= 2 ? true : undefined),
      {
        timeoutMs: 30_000,
        description: 'two scheduled gates',
      },
    );
    const matched = await keptDeclared();
    expect(posts(DRIFT)).toEqual([]);

    // Act: every node now runs v1.13.9; Terraform still declares v1.12.11.
    const nodes = h.sim.cluster('production').nodes;
    for (const node of nodes) node.talosVersion = 'v1.13.9';
    const appeared = await h.slack.waitFor(() => posts(DRIFT)[0], { timeoutMs: 30_000, description: 'the drift post' });
    const before = h.slack.channelMessages(CHANNELS.production).length;
    await h.command('health');
    const gate = await h.slack.waitFor(
      () =>
        h.slack
          .channelMessages(CHANNELS.production)
          .slice(before)
          .find((m) => /Health gate (passed|failed)/.test(m.text)),
      { timeoutMs: 60_000, description: 'the requested gate' },
    );
    const check = await h.slack.waitFor(
      () => h.slack.thread(CHANNELS.production, gate.ts).find((r) => r.text.includes('Versions declared in Terraform')),
      { timeoutMs: 10_000, description: 'the declared-versions check' },
    );
    const status = await h.command('status');
    await h.slack.openHome(USERS.carol);
    const home = await h.slack.waitFor(
      () =>
        h.slack
          .publishedViews(USERS.carol)
          .map((p) => JSON.stringify(p.view.blocks ?? []))
          .find((shown) => shown.includes('Declared in Terraform')),
      { timeoutMs: 30_000, description: 'the Home with the drift' },
    );
    const kept = await keptDeclared();

    for (const node of nodes) node.talosVersion = 'v1.12.11';
    const cleared = await h.slack.waitFor(() => posts(CLEARED)[0], { timeoutMs: 30_000, description: 'the drift cleared' });

    // Assert: before, every node ran what Terraform declares.
    expect(matched?.state).toBe('match');
    // The gate passes, with the check as a warning naming both versions and the fix.
    const fix = '`talos_version = "v1.13.9"`';
    expect(gate.text).toContain('Health gate passed');
    expect(check.text).toMatch(/^⚠️/u);
    expect(check.text).toContain('Terraform declares Talos v1.12.11 (output talos_version)');
    expect(check.text).toContain('highest v1.13.9');
    expect(kept).toEqual({
      state: 'drift',
      lines: [
        `Terraform declares Talos v1.12.11 (output talos_version), but ${nodes.length} node(s) run another version (highest v1.13.9)`,
      ],
      fixes: [`make the Terraform change ${fix}, commit it and run \`/talos plan\``],
    });
    expect(status).toContain('Declared in Terraform: ⚠️ *drift*: Terraform declares Talos v1.12.11');
    expect(status).toContain(fix);
    expect(home).toContain('⚠️ *drift*');
    expect(home).toContain(JSON.stringify(fix).slice(1, -1));
    expect(appeared).toContain('production drifts from what Terraform declares: Terraform declares Talos v1.12.11');
    expect(appeared).toContain(fix);
    expect(cleared).toMatch(/^✅ production runs what Terraform declares again/);
    expect(posts(DRIFT)).toHaveLength(1);
  }, 180_000);
});

describe('a declared version the bot cannot read', () => {
  it('leaves the plan offered, and the plan says which rule is off and why', async () => {
    // Arrange
    await h.sim.terraform.changePatch('staging');
    await h.sim.terraform.commit('staging: a sysctl patch');

    // Act
    const p = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    const planned = await waitForRootState(h, p, /waiting for an approver's Apply|refused/, CHANNELS.staging);

    // Assert
    const note =
      '⚠️ The rule "apply only after every node runs the declared Kubernetes version" is off for this plan: the plan has no output k8s_version (declaredVersions.kubernetes)';
    const op = await storedOperation(h, p.opId);
    expect(op.state).toBe('planned');
    expect(op.notes).toContainEqual(expect.stringContaining(note));
    expect(op.notes.some((n) => n.includes('declared Talos version" is off'))).toBe(false);
    expect(JSON.stringify(planned.blocks)).toContain('is off for this plan');
  }, 90_000);
});
