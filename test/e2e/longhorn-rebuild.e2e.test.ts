/**
 * Slow is not failed: after each node's reboot Longhorn rebuilds that node's replicas, and the
 * upgrade waits for the rebuild under its own bound (LONGHORN_REBUILD_TIMEOUT_SECONDS), not the
 * node-ready timeout. A rebuild longer than a reboot completes the upgrade; one beyond its own bound
 * stops it with a Retry that waits again, and no Rollback of the healthy, upgraded node.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { productionShape, stagingShape } from '../sim/index.ts';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';
import { approveUntilDone, clickStart, requestUpgrade } from '../support/upgrade-flow.ts';
import { storedOperation } from '../support/stored-operation.ts';

const CLUSTERS = [stagingShape({ talosVersion: 'v1.11.6' }), productionShape({ talosVersion: 'v1.11.6' })];
const TARGET = 'v1.12.11';

function upgradeCalls(h: Harness, since: number): string[] {
  return h.sim.calls
    .slice(since)
    .filter((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade')
    .map((c) => c.argv[c.argv.indexOf('--nodes') + 1] ?? '');
}

/** Every version of every reply in the thread: a progress reply is edited to its result at the end. */
function threadVersions(h: Harness, rootTs: string): string[] {
  return h.slack
    .thread(CHANNELS.production, rootTs)
    .flatMap((m) => h.slack.versions(CHANNELS.production, m.ts).map((v) => v.text + JSON.stringify(v.blocks ?? [])));
}

/** The rebuild progress figures the first node's reply has shown (`rebuilding on talos-prd-cp-1: 20%`), across its edits. */
function cp1Progress(h: Harness, rootTs: string): Set<number> {
  const shown = threadVersions(h, rootTs).filter((t) => t.includes('Longhorn after 10.0.30.11, up to 60 s'));
  return new Set(shown.flatMap((t) => [...t.matchAll(/rebuilding on talos-prd-cp-1: (\d+)%/g)].map((m) => Number(m[1]))));
}

describe('a Longhorn rebuild after each node of a Talos upgrade', () => {
  let h: Harness;

  afterEach(async () => {
    await h?.stop();
  });

  it('outlasting NODE_READY_TIMEOUT_SECONDS but within its own bound, does not stop the upgrade, and its progress is shown', async () => {
    // Each node's replicas rebuild for 12 s after it is back: four times the 3 s node-ready bound.
    h = await startHarness({
      clusters: CLUSTERS,
      timing: { longhornRebuildMs: 12_000 },
      env: { NODE_READY_TIMEOUT_SECONDS: '3', LONGHORN_REBUILD_TIMEOUT_SECONDS: '60' },
    });
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    expect(plan.root.text).toContain('planned');

    // The first node's rebuild is held at 20 %, then at 70 %, each until its reply has shown it: two
    // progress figures however slowly the bot polls or edits on a loaded machine.
    const heldSince = Date.now();
    await clickStart(h, plan);
    const finishing = approveUntilDone(h, plan);
    for (const percent of [20, 70]) {
      h.sim.faults.set('production', { longhornRebuildHeld: { hostname: 'talos-prd-cp-1', percent, since: heldSince } });
      await h.slack.waitFor(() => cp1Progress(h, plan.root.ts).has(percent), {
        timeoutMs: 60_000,
        description: `the first node's reply showing its rebuild at ${percent} %`,
      });
    }
    h.sim.faults.clear('production', 'longhornRebuildHeld');
    const done = await finishing;

    expect(done.text).toContain('completed');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('completed');
    expect(op.retry).toBeUndefined();
    // The first node's reply showed its volumes rebuilding and how far each was, edited as the rebuild went on.
    expect([...cp1Progress(h, plan.root.ts)]).toEqual(expect.arrayContaining([20, 70]));
  }, 180_000);

  it('beyond LONGHORN_REBUILD_TIMEOUT_SECONDS stops after the first node with a Retry that waits again and no Rollback, naming the volumes still rebuilding', async () => {
    h = await startHarness({
      clusters: CLUSTERS,
      timing: { longhornRebuildMs: 600_000 },
      env: { NODE_READY_TIMEOUT_SECONDS: '3', LONGHORN_REBUILD_TIMEOUT_SECONDS: '2' },
    });
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('stopped');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11']);
    const op = await storedOperation(h, plan.opId);
    const step = op.steps.find((s) => s.node === '10.0.30.11');
    expect(step?.status).toBe('failed');
    expect(op.retry).toMatchObject({ step: step?.id, state: 'offered' });
    expect(op.failure).toBeUndefined();
    const thread = threadVersions(h, plan.root.ts).join('\n');
    expect(thread).toContain('Longhorn volumes are still not healthy after 10.0.30.11 after 2 s');
    expect(thread).toMatch(/rebuilding on talos-prd-cp-1: \d+%/);
    expect(thread).toContain('waits again, up to 2 s, for Longhorn to finish rebuilding');
  });

  it('does not hold the first node for a volume degraded before the upgrade that no node of it made worse', async () => {
    h = await startHarness({
      clusters: CLUSTERS,
      timing: { longhornRebuildMs: 1_000 },
      env: { NODE_READY_TIMEOUT_SECONDS: '3', LONGHORN_REBUILD_TIMEOUT_SECONDS: '5' },
    });
    // postgres-1's replica on talos-prd-cp-3 failed before the upgrade: the volume stays degraded throughout.
    h.sim.faults.set('production', { longhornReplicaFailed: { 'postgres-1': ['talos-prd-cp-3'] } });
    const since = h.sim.calls.length;
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    expect(plan.root.text).toContain('planned');

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    expect(upgradeCalls(h, since)).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    const op = await storedOperation(h, plan.opId);
    expect(op.baseline?.items).toEqual([expect.objectContaining({ kind: 'longhorn', reason: 'degraded (attached)' })]);
    const volume = op.baseline!.items[0]!.name;
    expect(volume).toContain('postgres-1');
    expect(op.steps.find((s) => s.node === '10.0.30.11')?.detail).toContain(
      `Longhorn volumes degraded before the operation and not made worse by it (not waited for): ${volume}: degraded (attached)`,
    );
    // The first node was not held: nothing waited for Longhorn before it.
    expect(threadVersions(h, plan.root.ts).join('\n')).not.toContain('Longhorn before 10.0.30.11');
  });
});
