import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { talosUpgradeData } from '../../jobs/playbooks/talos-upgrade/data.ts';
import { productionShape, stagingShape } from '../sim/shapes.ts';
import { approveUntilDone, clickStart, opLink, requestUpgrade, waitForRootState } from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function rootBlocks(harness: Harness, ts: string): string {
  return JSON.stringify(harness.slack.message(CHANNELS.production, ts)?.blocks ?? []);
}

describe('staging rehearsal before a production upgrade', () => {
  it('needs two approvers to override when staging never ran the same upgrade, and the record says so', async () => {
    h = await startHarness();
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    expect(rootBlocks(harness, plan.root.ts)).toContain('No completed staging upgrade to v1.12.11');

    await clickStart(harness, plan, USERS.alice, CHANNELS.production, { override: false });
    await harness.slack.waitFor(() => harness.slack.ephemerals().find((e) => e.user === USERS.alice && /must click Override/.test(e.text)));
    await harness.slack.clickButton({
      user: USERS.alice,
      channel: CHANNELS.production,
      messageTs: plan.root.ts,
      actionId: 'talos-op-override',
    });
    await harness.slack.waitFor(() => harness.slack.ephemerals().find((e) => e.user === USERS.alice && /Only approvers/.test(e.text)));
    expect(await harness.command('status')).toContain('no operation holds it');

    // One approver's override is not enough: Start waits for a second approver, and the same one twice counts once.
    const override = (user: string) =>
      harness.slack.clickButton({ user, channel: CHANNELS.production, messageTs: plan.root.ts, actionId: 'talos-op-override' });
    await override(USERS.carol);
    await harness.slack.waitFor(() => /overridden by <@U0CAROL>/.test(rootBlocks(harness, plan.root.ts)), {
      description: 'the first override',
    });
    expect(rootBlocks(harness, plan.root.ts)).toContain('a second approver must override too');
    await override(USERS.carol);
    await harness.slack.waitFor(() =>
      harness.slack
        .ephemerals(CHANNELS.production, USERS.carol)
        .find((e) => /overrode the missing staging rehearsal .* already/.test(e.text)),
    );
    await clickStart(harness, plan, USERS.alice, CHANNELS.production, { override: false });
    await harness.slack.waitFor(() =>
      harness.slack.ephemerals(CHANNELS.production, USERS.alice).find((e) => /a second approver must click Override too/.test(e.text)),
    );
    expect(await harness.command('status')).toContain('no operation holds it');
    await override(USERS.dave);
    await harness.slack.waitFor(() => /overridden by <@U0CAROL> at .* and <@U0DAVE> at /.test(rootBlocks(harness, plan.root.ts)), {
      description: 'the second override',
    });

    await clickStart(harness, plan);
    await approveUntilDone(harness, plan);
    const record = await harness.slack.waitFor(() =>
      harness.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`),
    );
    expect(record.content).toMatch(/Staging rehearsal: none in the records; overridden by U0CAROL at \S+ and U0DAVE at \S+/);
    const op = await storedOperation(harness, plan.opId);
    expect(
      op.audit
        .filter((e) => e.event === 'override: no staging rehearsal')
        .map((e) => [e.actor, (e.detail ?? '').endsWith('(first of two approvers)'), (e.detail ?? '').endsWith('(second approver)')]),
    ).toEqual([
      [USERS.carol, true, false],
      [USERS.dave, false, true],
    ]);
  });

  it('recognises a completed staging upgrade to the same version and needs no override', async () => {
    h = await startHarness();
    const harness = h;
    const staging = await requestUpgrade(harness, `upgrade talos ${TARGET}`, { channel: CHANNELS.staging });
    expect(JSON.stringify(harness.slack.message(CHANNELS.staging, staging.root.ts)?.blocks)).not.toContain('staging rehearsal');
    await clickStart(harness, staging, USERS.alice, CHANNELS.staging);
    expect((await approveUntilDone(harness, staging, CHANNELS.staging)).text).toContain('completed');

    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    expect(rootBlocks(harness, plan.root.ts)).toContain(`Rehearsed in staging: ${opLink(staging, CHANNELS.staging)}`);
    expect(rootBlocks(harness, plan.root.ts)).not.toContain('talos-op-override');
  });

  it('does not count a completed staging upgrade to the same version installed from another schematic, and says why', async () => {
    // Arrange: a staging built without production's extensions, upgraded to the target.
    h = await startHarness({ clusters: [stagingShape({ defaultExtensions: [] }), productionShape()] });
    const harness = h;
    const staging = await requestUpgrade(harness, `upgrade talos ${TARGET}`, { channel: CHANNELS.staging });
    await clickStart(harness, staging, USERS.alice, CHANNELS.staging);
    expect((await approveUntilDone(harness, staging, CHANNELS.staging)).text).toContain('completed');
    const stagingImage = talosUpgradeData(await storedOperation(harness, staging.opId)).classImages?.default;

    // Act
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`);
    await waitForSettled(harness);

    // Assert
    const op = await storedOperation(harness, plan.opId);
    const productionImage = talosUpgradeData(op).classImages?.default;
    expect(stagingImage).toMatch(/^factory\.talos\.dev\/nocloud-installer\/[0-9a-f]{64}:v1\.12\.11$/);
    expect(productionImage).not.toBe(stagingImage);
    expect(op.rehearsal).toEqual({});
    expect(op.notes).toContainEqual(
      `The staging upgrade ${staging.opId} to ${TARGET} is not this exact target, so it does not count as the rehearsal: its default nodes installed ${stagingImage}, production's get ${productionImage}.`,
    );
    expect(rootBlocks(harness, plan.root.ts)).toContain('talos-op-override');
  });
});

describe('maintenance windows', () => {
  function windowAt(hoursFromNow: number, durationMinutes: number) {
    const hour = (new Date().getUTCHours() + 24 + hoursFromNow) % 24;
    return { start: `0 ${hour} * * *`, durationMinutes, timeZone: 'UTC' };
  }

  it('refuses a production upgrade outside every declared window and says when the next opens', async () => {
    h = await startHarness({ inventory: { extra: { production: { maintenanceWindows: [windowAt(6, 60)] } } } });
    const since = h.sim.calls.length;
    const reply = await h.command(`upgrade talos ${TARGET}`);
    expect(reply).toMatch(
      /only inside a maintenance window[\s\S]*next window opens <!date\^\d+\^\{date_short_pretty\} \{time\}\|\d{4}-\d\d-\d\d \d\d:00 UTC>/,
    );
    expect(await h.command('upgrade k8s 1.34.2')).toContain('only inside a maintenance window');
    expect(h.sim.calls.length).toBe(since);
  });

  it('takes it inside a window, and staging is never restricted', async () => {
    h = await startHarness({
      inventory: { extra: { production: { maintenanceWindows: [windowAt(0, 120)] }, staging: { maintenanceWindows: [windowAt(6, 60)] } } },
    });
    expect(await h.command(`upgrade talos ${TARGET}`)).toContain('Preflight for the Talos upgrade of *production*');
    expect(await h.command(`upgrade talos ${TARGET}`, { channel: CHANNELS.staging })).toContain(
      'Preflight for the Talos upgrade of *staging*',
    );
  });

  it('refuses every mutating operation on a production cluster that declares no window, and says how to declare one', async () => {
    // Arrange: production declares neither windows nor `always`.
    h = await startHarness({ inventory: { extra: { production: { maintenanceWindows: [] } } } });
    const since = h.sim.calls.length;

    // Act
    const upgrade = await h.command(`upgrade talos ${TARGET}`);
    const k8s = await h.command('upgrade k8s 1.34.2');
    const staging = await h.command(`upgrade talos ${TARGET}`, { channel: CHANNELS.staging });

    // Assert
    expect(upgrade).toContain('this cluster declares none, so it takes no change');
    expect(upgrade).toContain('`maintenanceWindows: always`');
    expect(k8s).toContain('this cluster declares none');
    expect(staging).toContain('Preflight for the Talos upgrade of *staging*');
    expect(h.sim.calls.slice(since).filter((c) => c.cluster === 'production' && c.argv[0] === 'upgrade')).toEqual([]);
  });

  it('lets the inventory allow production changes outside the windows', async () => {
    h = await startHarness({ inventory: { extra: { production: { maintenanceWindows: [windowAt(6, 60)], allowOutsideWindows: true } } } });
    expect(await h.command(`upgrade talos ${TARGET}`)).toContain('Preflight for the Talos upgrade of *production*');
  });
});

describe('/talos record', () => {
  it("posts the maintenance record in the operation's thread with the Markdown attached", async () => {
    h = await startHarness();
    const harness = h;
    const ack = await harness.command('snapshot');
    const opId = /op-[a-z0-9]+/.exec(ack)![0];
    await harness.slack.waitFor(() =>
      harness.slack.channelMessages(CHANNELS.production).find((m) => m.text.startsWith('✅') && m.text.includes(opId)),
    );
    expect(await harness.command(`record ${opId}`)).toContain('Posting the maintenance record');
    const file = await harness.slack.waitFor(() =>
      harness.slack.uploadedFiles().find((f) => f.filename === `${opId}-maintenance-record.md`),
    );
    expect(file.content).toContain(`# Maintenance record ${opId}`);
    expect(file.content).toMatch(/Snapshot: production-\d{8}T\d{6}Z-rev\d+/);
    expect(await harness.command('record op-unknown1')).toContain('There is no operation `op-unknown1`');
    expect(await harness.command(`record ${opId}`, { channel: CHANNELS.staging })).toContain('belongs to *production*');
  });
});

describe('plan freshness', () => {
  /** When the bot created the operation, as it stored it: the plan's age counts from there. */
  async function createdAt(harness: Harness, opId: string): Promise<number> {
    const redis = new Redis(harness.redis.url, { maxRetriesPerRequest: 1 });
    try {
      const stored = JSON.parse((await redis.get(`talos:op:${opId}`)) ?? '{}') as { createdAt?: string };
      if (stored.createdAt === undefined) throw new Error(`${opId} is not stored with its creation time`);
      return Date.parse(stored.createdAt);
    } finally {
      await redis.quit();
    }
  }

  it('refuses to start a plan older than PLAN_TTL_MINUTES', async () => {
    const ttlMs = 600;
    h = await startHarness({ env: { PLAN_TTL_MINUTES: String(ttlMs / 60_000) } });
    const harness = h;
    const plan = await requestUpgrade(harness, `upgrade talos ${TARGET}`, { channel: CHANNELS.staging });
    const planned = await createdAt(harness, plan.opId);
    await harness.slack.waitFor(() => Date.now() - planned > ttlMs, { description: 'the plan to outlive PLAN_TTL_MINUTES' });
    await clickStart(harness, plan, USERS.alice, CHANNELS.staging);
    await harness.slack.waitFor(() => harness.slack.ephemerals().find((e) => /older than/.test(e.text)));
    await waitForRootState(harness, plan, /planned/, CHANNELS.staging);
    await waitForSettled(harness);
    expect(harness.sim.calls.filter((c) => c.argv[0] === 'upgrade')).toEqual([]);
  });
});
