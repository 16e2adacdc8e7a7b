import { describe, expect, it } from 'vitest';
import {
  deriveInstallerImages,
  imageChanges,
  schematicOfImage,
  type InstallerImages,
  type NodeInstaller,
} from '../../../../../jobs/playbooks/talos-upgrade/installer-images.ts';
import type { TerraformOutputs } from '../../../../../src/cluster/terraform-outputs.ts';
import type { RecordedNodeClass } from '../../../../../src/ops/node-class-record.ts';
import type { Talosctl } from '../../../../../src/talos/talosctl.ts';
import { inventoryOf } from '../../../../support/inventory-yaml.ts';

const DEFAULT = 'd'.repeat(64);
const LONGHORN = 'e'.repeat(64);
const OLD = 'f'.repeat(64);
const LONGHORN_OUTPUT = `factory.talos.dev/nocloud-installer/${LONGHORN}:v1.11.6`;
const TARGET = 'v1.12.1';
const CPS = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
const W1 = '10.0.30.21';
const W2 = '10.0.30.22';

function outputs(values: { schematicId: string; longhornInstaller?: string }): TerraformOutputs {
  const names: Record<string, string> = {
    schematicId: 'talos_image_factory_schematic_id',
    longhornInstaller: 'talos_longhorn_installer_image',
  };
  return {
    name: (role) => names[role] ?? role,
    optional: (role) => Promise.resolve((values as Record<string, string | undefined>)[role]),
    required: (role) => Promise.resolve((values as Record<string, string>)[role]!),
  } as TerraformOutputs;
}

/** `talosctl get extensions -o json` for the nodes that answer, each running `runs[node]` (the `schematic` pseudo-extension). */
function talosctl(runs: Record<string, string | undefined>): Talosctl {
  return {
    binary: 'talosctl',
    run(_args, nodes) {
      const entry = (node: string, name: string, version: string): string =>
        `${JSON.stringify({ node, metadata: { namespace: 'runtime', type: 'ExtensionStatuses.runtime.talos.dev', id: name }, spec: { metadata: { name, version } } })}\n`;
      const up = nodes.filter((n) => runs[n] !== undefined);
      const down = nodes.filter((n) => runs[n] === undefined);
      if (down.includes(nodes[0]!))
        return Promise.resolve({ command: [], stdout: '', stderr: 'rpc error: connection refused\n', exitCode: 1, durationMs: 1 });
      const stdout = up.map((n) => entry(n, 'iscsi-tools', 'v0.2.0') + entry(n, 'schematic', runs[n]!)).join('');
      const stderr =
        down.length === 0 ? '' : `${down.length} error occurred:\n${down.map(() => '\t* rpc error: connection refused').join('\n')}\n`;
      return Promise.resolve({ command: [], stdout, stderr, exitCode: down.length === 0 ? 0 : 1, durationMs: 1 });
    },
  };
}

const cluster = (fields: Record<string, string | readonly string[]> = {}) =>
  inventoryOf({ production: { workers: [W1, W2], ...fields } }).clusters[0]!;
const noEvidence = { recorded: new Map<string, RecordedNodeClass>(), runningVersion: 'v1.11.6' };
const image = (schematic: string, version = TARGET) => `factory.talos.dev/nocloud-installer/${schematic}:${version}`;

describe('deriveInstallerImages', () => {
  it("gives each node the installer of the schematic it runs: the default one, or Terraform's Longhorn output retagged", async () => {
    const runs = { ...Object.fromEntries(CPS.map((n) => [n, DEFAULT])), [W1]: LONGHORN, [W2]: DEFAULT };
    const derived = await deriveInstallerImages(
      outputs({ schematicId: DEFAULT, longhornInstaller: LONGHORN_OUTPUT }),
      cluster(),
      talosctl(runs),
      [CPS[0]!, W1, W2],
      TARGET,
      noEvidence,
    );
    expect(derived.refusals).toEqual([]);
    expect(derived.schematic).toBe(DEFAULT);
    expect(derived.byNode.get(CPS[0]!)).toMatchObject({ image: image(DEFAULT), schematic: DEFAULT, nodeClass: { class: 'default' } });
    expect(derived.byNode.get(W1)).toMatchObject({ image: image(LONGHORN), schematic: LONGHORN, nodeClass: { class: 'longhorn' } });
    expect(derived.byNode.get(W2)).toMatchObject({ image: image(DEFAULT), nodeClass: { class: 'default' } });
  });

  it('refuses a node that does not answer, and derives the others', async () => {
    const runs = { ...Object.fromEntries(CPS.map((n) => [n, DEFAULT])), [W1]: undefined, [W2]: DEFAULT };
    const derived = await deriveInstallerImages(outputs({ schematicId: DEFAULT }), cluster(), talosctl(runs), [W1, W2], TARGET, noEvidence);
    expect([...derived.byNode.keys()]).toEqual([W2]);
    expect(derived.refusals).toHaveLength(1);
    expect(derived.refusals[0]).toMatch(/^10\.0\.30\.21 does not answer talosctl get extensions .*cannot be read$/);
  });

  it('refuses a worker declared a Longhorn worker when Terraform outputs no Longhorn installer', async () => {
    const runs = { ...Object.fromEntries(CPS.map((n) => [n, DEFAULT])), [W1]: OLD, [W2]: DEFAULT };
    const derived = await deriveInstallerImages(
      outputs({ schematicId: DEFAULT }),
      cluster({ longhornNodes: [W1] }),
      talosctl(runs),
      [W1],
      TARGET,
      noEvidence,
    );
    expect(derived.byNode.size).toBe(0);
    expect(derived.refusals).toEqual([
      expect.stringMatching(/^10\.0\.30\.21 is of the Longhorn node class .*outputs no talos_longhorn_installer_image/),
    ]);
  });

  it('never guesses the default class for a worker on neither schematic while another node cannot be read (it might be Longhorn)', async () => {
    const runs = { ...Object.fromEntries(CPS.map((n) => [n, DEFAULT])), [W1]: OLD, [W2]: undefined };
    const derived = await deriveInstallerImages(
      outputs({ schematicId: DEFAULT, longhornInstaller: LONGHORN_OUTPUT }),
      cluster(),
      talosctl(runs),
      [W1],
      TARGET,
      noEvidence,
    );
    expect(derived.byNode.has(W1)).toBe(false);
    expect(derived.refusals.some((r) => r.startsWith(`${W1} `))).toBe(true);
  });

  it('a node of two classes by its evidence: what it runs decides over the inventory and the record', async () => {
    // Declared and recorded Longhorn, but it runs the default schematic: the default installer keeps it what it is.
    const runs = { ...Object.fromEntries(CPS.map((n) => [n, DEFAULT])), [W1]: DEFAULT, [W2]: DEFAULT };
    const recorded = new Map<string, RecordedNodeClass>([[W1, { class: 'longhorn', op: 'op-0000000001' } as RecordedNodeClass]]);
    const derived = await deriveInstallerImages(
      outputs({ schematicId: DEFAULT, longhornInstaller: LONGHORN_OUTPUT }),
      cluster({ longhornNodes: [W1] }),
      talosctl(runs),
      [W1],
      TARGET,
      { recorded, runningVersion: 'v1.11.6' },
    );
    expect(derived.refusals).toEqual([]);
    expect(derived.byNode.get(W1)).toMatchObject({ image: image(DEFAULT), nodeClass: { class: 'default' } });
  });

  it('a worker on neither schematic takes the class recorded at its last operation, before the inventory', async () => {
    const runs = { ...Object.fromEntries(CPS.map((n) => [n, DEFAULT])), [W1]: OLD, [W2]: DEFAULT };
    const recorded = new Map<string, RecordedNodeClass>([[W1, { class: 'longhorn', op: 'op-0000000001' } as RecordedNodeClass]]);
    const derived = await deriveInstallerImages(
      outputs({ schematicId: DEFAULT, longhornInstaller: LONGHORN_OUTPUT }),
      cluster({ defaultClassNodes: [W1] }),
      talosctl(runs),
      [W1],
      TARGET,
      { recorded, runningVersion: 'v1.11.6' },
    );
    expect(derived.byNode.get(W1)).toMatchObject({ image: image(LONGHORN), nodeClass: { class: 'longhorn' } });
  });
});

describe('schematicOfImage', () => {
  it.each([
    [image(DEFAULT), DEFAULT],
    ['ghcr.io/siderolabs/installer:v1.12.1', undefined],
    [undefined, undefined],
  ])('%s → %s', (reference, expected) => {
    expect(schematicOfImage(reference)).toBe(expected);
  });
});

describe('imageChanges', () => {
  const node = (schematic: string, running: NodeInstaller['running']) => ({
    image: image(schematic),
    schematic,
    nodeClass: { class: 'default' as const, because: 'test' },
    running,
  });

  it('lists the nodes whose derived schematic is not the one they run, including a node with no factory schematic', () => {
    const images: InstallerImages = {
      schematic: DEFAULT,
      refusals: [],
      byNode: new Map([
        [CPS[0]!, node(DEFAULT, { reachable: true, schematic: DEFAULT, extensions: [] })],
        [W1, node(DEFAULT, { reachable: true, schematic: OLD, extensions: [] })],
        [W2, node(DEFAULT, { reachable: true, schematic: undefined, extensions: [] })],
      ]),
    };
    expect(imageChanges(images)).toEqual([W1, W2]);
  });
});
