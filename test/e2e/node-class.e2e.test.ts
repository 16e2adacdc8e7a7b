import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { schematicId } from '../sim/schematics.ts';
import { productionShape, stagingShape } from '../sim/shapes.ts';
import { approveUntilDone, clickStart, requestUpgrade } from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
let h: Harness | undefined;

// The runbook's production design: three hyperconverged control planes on the default schematic (which carries
// iscsi-tools and util-linux-tools), and a Longhorn worker built from talos_longhorn_installer_image.
const LONGHORN_WORKER = {
  hostname: 'talos-prd-w-1',
  address: '10.0.30.21',
  role: 'worker',
  host: 'pve1',
  longhorn: true,
  installer: 'longhorn',
} as const;
const DEFAULT_WORKER = { hostname: 'talos-prd-w-2', address: '10.0.30.22', role: 'worker', host: 'pve2' } as const;
const withWorkers = (...workers: (typeof LONGHORN_WORKER | typeof DEFAULT_WORKER)[]) => [
  stagingShape(),
  productionShape({ nodes: [...productionShape().nodes, ...workers] }),
];

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function upgradeCalls(harness: Harness, since: number): [string | undefined, string | undefined][] {
  const flag = (argv: string[], name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
  return harness.sim.calls
    .slice(since)
    .filter((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade')
    .map((c) => [flag(c.argv, '--nodes'), flag(c.argv, '--image')]);
}

describe("a production Talos upgrade on the runbook's design", () => {
  it('keeps every node on its own schematic: the control planes on the default one, the Longhorn worker on the Longhorn one', async () => {
    // Arrange
    h = await startHarness({ clusters: withWorkers(LONGHORN_WORKER) });
    const tf = h.sim.cluster('production').terraform;
    const before = Object.fromEntries(h.sim.cluster('production').nodes.map((n) => [n.address, n.schematic]));
    const since = h.sim.calls.length;

    // Act
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    // Assert
    expect(before).toEqual({
      '10.0.30.11': tf.defaultSchematic,
      '10.0.30.12': tf.defaultSchematic,
      '10.0.30.13': tf.defaultSchematic,
      '10.0.30.21': tf.longhornSchematic,
    });
    const blocks = JSON.stringify(plan.root.blocks);
    expect(blocks).toContain('10.0.30.11: default (a control plane, on the default schematic)');
    expect(blocks).toContain('10.0.30.21: Longhorn (runs the Longhorn schematic (talos_longhorn_installer_image))');
    expect(done.text).toContain('completed');
    const installer = (schematic: string | undefined): string => `factory.talos.dev/nocloud-installer/${schematic}:${TARGET}`;
    expect(upgradeCalls(h, since)).toEqual([
      ['10.0.30.21', installer(tf.longhornSchematic)],
      ['10.0.30.11', installer(tf.defaultSchematic)],
      ['10.0.30.12', installer(tf.defaultSchematic)],
      ['10.0.30.13', installer(tf.defaultSchematic)],
    ]);
    for (const node of h.sim.cluster('production').nodes)
      expect([node.address, node.talosVersion, node.schematic]).toEqual([node.address, TARGET, before[node.address]]);
  });

  it('re-installs a Longhorn worker left on the old Longhorn schematic by a Terraform change, by the class the bot recorded at its upgrade', async () => {
    // Arrange: the inventory declares no class, so only the bot's record can place the worker once its schematic is stale.
    h = await startHarness({ clusters: withWorkers(LONGHORN_WORKER), inventory: { extra: { production: { longhornNodes: [] } } } });
    const tf = h.sim.cluster('production').terraform;
    const first = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, first);
    expect((await approveUntilDone(h, first)).text).toContain('completed');
    const oldLonghorn = tf.longhornSchematic;
    // Terraform adds an extension to the Longhorn workers' schematic.
    const extensions = ['siderolabs/intel-ucode', 'siderolabs/iscsi-tools', 'siderolabs/qemu-guest-agent', 'siderolabs/util-linux-tools'];
    const newLonghorn = schematicId(extensions);
    h.sim.state.schematics[newLonghorn] = [...extensions].sort();
    tf.longhornSchematic = newLonghorn;
    const since = h.sim.calls.length;

    // Act: the same-version extension change
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    // Assert
    expect(JSON.stringify(plan.root.blocks)).toContain(
      `10.0.30.21: Longhorn (runs schematic ${oldLonghorn}, neither output's; the bot recorded it in the longhorn class when ${first.opId} completed)`,
    );
    expect(done.text).toContain('completed');
    expect(upgradeCalls(h, since)).toEqual([['10.0.30.21', `factory.talos.dev/nocloud-installer/${newLonghorn}:${TARGET}`]]);
    expect(h.sim.cluster('production').nodes.map((n) => [n.address, n.schematic])).toEqual([
      ['10.0.30.11', tf.defaultSchematic],
      ['10.0.30.12', tf.defaultSchematic],
      ['10.0.30.13', tf.defaultSchematic],
      ['10.0.30.21', newLonghorn],
    ]);
  });
});

describe('a production Talos upgrade refuses a node whose installer it cannot choose', () => {
  it('refuses while a control plane runs the Longhorn schematic, and says to ask for the same-version change', async () => {
    // Arrange
    h = await startHarness();
    const tf = h.sim.cluster('production').terraform;
    h.sim.node('production', '10.0.30.12').schematic = tf.longhornSchematic!;
    const since = h.sim.calls.length;

    // Act
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    // Assert
    const blocks = JSON.stringify(plan.root.blocks);
    expect(plan.root.text).toContain('refused');
    expect(blocks).toContain(
      `10.0.30.12 is a control plane and runs the Longhorn schematic ${tf.longhornSchematic} (talos_longhorn_installer_image)`,
    );
    expect(blocks).toContain('ask for it as such (`/talos upgrade talos v1.11.6`)');
    expect(blocks).not.toContain('talos-op-start');
    expect(upgradeCalls(h, since)).toEqual([]);
  });

  it("refuses a worker that runs neither output's schematic when the bot has no evidence of its class", async () => {
    // Arrange: Terraform changed the default schematic; one worker still runs one neither output names.
    h = await startHarness({ clusters: withWorkers(LONGHORN_WORKER, DEFAULT_WORKER) });
    const stale = schematicId(['siderolabs/iscsi-tools']);
    h.sim.state.schematics[stale] = ['siderolabs/iscsi-tools'];
    h.sim.node('production', '10.0.30.22').schematic = stale;
    const since = h.sim.calls.length;

    // Act
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    // Assert
    const blocks = JSON.stringify(plan.root.blocks);
    expect(plan.root.text).toContain('refused');
    expect(blocks).toContain(`10.0.30.22 is a worker that runs schematic ${stale}, neither the default schematic`);
    expect(blocks).toContain('add it to longhornNodes if it is a Longhorn worker, or to defaultClassNodes if it is not');
    expect(blocks).not.toContain('talos-op-start');
    expect(upgradeCalls(h, since)).toEqual([]);
  });
});
