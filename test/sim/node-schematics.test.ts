import { describe } from 'vitest';
import { simTest, tableRows } from './sim-fixture.ts';
import { schematicId } from './schematics.ts';
import { productionShape } from './shapes.ts';

const LONGHORN_WORKER = {
  hostname: 'talos-prd-w-1',
  address: '10.0.30.21',
  role: 'worker',
  host: 'pve1',
  longhorn: true,
  installer: 'longhorn',
} as const;
const it = simTest({ clusters: [productionShape({ nodes: [...productionShape().nodes, LONGHORN_WORKER] })] });

describe.concurrent("the runbook's production design", () => {
  it('builds every node with iscsi-tools and util-linux-tools, and gives the Longhorn schematic to the Longhorn worker only', async ({
    f,
    expect,
  }) => {
    // Act
    const tf = f.sim.cluster('production').terraform;
    const outputs = JSON.parse((await f.tofu('production', ['output', '-json'])).stdout) as Record<string, { value: string }>;
    const schematics = await Promise.all(
      ['10.0.30.11', '10.0.30.12', '10.0.30.13', '10.0.30.21'].map(async (node) => {
        const rows = tableRows((await f.talosctl('production', ['get', 'extensions', '-n', node])).stdout).slice(1);
        return [node, rows.find((r) => r[5] === 'schematic')?.[6], rows.filter((r) => r[5] !== 'schematic').map((r) => r[5])];
      }),
    );

    // Assert
    expect(tf.defaultSchematic).toBe(schematicId(['siderolabs/iscsi-tools', 'siderolabs/util-linux-tools']));
    expect(tf.longhornSchematic).not.toBe(tf.defaultSchematic);
    expect(outputs['talos_image_factory_schematic_id']?.value).toBe(tf.defaultSchematic);
    expect(outputs['talos_longhorn_installer_image']?.value).toBe(`factory.talos.dev/nocloud-installer/${tf.longhornSchematic}:v1.11.6`);
    expect(schematics).toEqual([
      ['10.0.30.11', tf.defaultSchematic, ['iscsi-tools', 'util-linux-tools']],
      ['10.0.30.12', tf.defaultSchematic, ['iscsi-tools', 'util-linux-tools']],
      ['10.0.30.13', tf.defaultSchematic, ['iscsi-tools', 'util-linux-tools']],
      ['10.0.30.21', tf.longhornSchematic, ['iscsi-tools', 'qemu-guest-agent', 'util-linux-tools']],
    ]);
  });

  it('runs iscsid as the extension service on every node whose image carries iscsi-tools', async ({ f, expect }) => {
    // Act
    const rows = tableRows((await f.talosctl('production', ['service', '-n', '10.0.30.11,10.0.30.21'])).stdout);

    // Assert
    expect(rows.filter((r) => r[1] === 'ext-iscsid').map((r) => r[0])).toEqual(['10.0.30.11', '10.0.30.21']);
  });

  it("boots a node Terraform adds as a Longhorn worker on the Longhorn installer's schematic", async ({ f, expect }) => {
    // Arrange
    await f.sim.terraform.addNode('production', {
      hostname: 'talos-prd-w-2',
      address: '10.0.30.22',
      role: 'worker',
      host: 'pve2',
      longhorn: true,
      installer: 'longhorn',
    });
    await f.sim.terraform.addNode('production', {
      hostname: 'talos-prd-w-3',
      address: '10.0.30.23',
      role: 'worker',
      host: 'pve3',
      longhorn: true,
    });

    // Act
    const plan = await f.tofu('production', ['plan', '-input=false', '-no-color', '-out=add.tfplan']);
    const apply = await f.tofu('production', ['apply', '-input=false', '-no-color', 'add.tfplan']);

    // Assert
    expect([plan.exitCode, apply.exitCode]).toEqual([0, 0]);
    const tf = f.sim.cluster('production').terraform;
    expect(f.sim.node('production', '10.0.30.22').schematic).toBe(tf.longhornSchematic);
    expect(f.sim.node('production', '10.0.30.23').schematic).toBe(tf.defaultSchematic);
  });
});
