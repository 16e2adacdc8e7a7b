import { describe, expect, it } from 'vitest';
import { helpFor } from '../../../handlers/commands/help.ts';
import { guidedForm, typedCommand } from '../../../handlers/guided-commands.ts';
import { REHEARSED_ITEM, REVIEW_ITEMS } from '../../../jobs/playbooks/talos-upgrade/texts.ts';
import type { GuidedForm, VersionForm } from '../../../src/chat/guided-modals.ts';
import { offeredTalosVersions, upgradeModal, nodePickerModal, runningWords } from '../../../src/chat/guided-modals.ts';
import { nextTalosTargets } from '../../../src/rules/next-talos-targets.ts';
import { parseInventory } from '../../../src/config/inventory.ts';
import { mergeSupportTable } from '../../../src/talos/compatibility.ts';
import { inventory } from '../../support/engine-fixture.ts';

/** The Talos upgrade's review, from its texts: the form's checkboxes are the items its Start records. */
const ALL = REVIEW_ITEMS;
const talosForm = guidedForm('talos-upgrade')!.form as VersionForm;
const formOf = (kind: string): GuidedForm => guidedForm(kind)!.form;

function submitted(kind: string, fields: { cluster?: string; version?: string; node?: string; review?: string[] }) {
  const values: Record<string, Record<string, unknown>> = {};
  if (fields.cluster) values.cluster = { cluster: { type: 'static_select', selected_option: { value: fields.cluster } } };
  if (fields.version) values.version = { version: { type: 'static_select', selected_option: { value: fields.version } } };
  if (fields.node) values.node = { node: { type: 'static_select', selected_option: { value: fields.node } } };
  values.review = { review: { type: 'checkboxes', selected_options: (fields.review ?? []).map((value) => ({ value })) } };
  return { private_metadata: JSON.stringify({ kind, cluster: fields.node ? 'production' : undefined }), state: { values } };
}

const inv = inventory(`    nodeNames:
      10.0.30.11: talos-prd-cp-1
      10.0.30.12: talos-prd-cp-2
`);
const production = inv.clusters[0]!;

describe('the upgrade modal', () => {
  it('offers the newest patch of each supported minor, newest first, without pre-releases', () => {
    // Act
    const offered = offeredTalosVersions(['v1.11.5', 'v1.11.6', 'v1.12.10', 'v1.12.11', 'v1.13.0-beta.1', 'v1.2.0', 'v1.13.9']);

    // Assert
    expect(offered).toEqual(['v1.13.9', 'v1.12.11', 'v1.11.6']);
  });

  it('offers a minor the inventory adds to the support table, with its Kubernetes range', () => {
    // Arrange
    const support = mergeSupportTable([{ talos: '1.15', kubernetesMin: '1.33', kubernetesMax: '1.38', upgradeFromMin: '1.13.0' }]);
    const factory = ['v1.14.3', 'v1.15.0'];

    // Act
    const offered = offeredTalosVersions(factory, support);
    const view = upgradeModal({ form: talosForm, clusters: [production], versions: { state: 'ready', versions: offered, support } });

    // Assert
    expect(offeredTalosVersions(factory)).toEqual(['v1.14.3']);
    expect(offered).toEqual(['v1.15.0', 'v1.14.3']);
    expect(JSON.stringify(view.blocks)).toContain('*v1.15.0* (Kubernetes 1.33–1.38)');
  });

  it('has the cluster select preselected on the channel cluster, the version select, and one checkbox per review item', () => {
    // Act
    const view = upgradeModal({
      form: talosForm,
      clusters: [production],
      channelCluster: 'production',
      versions: { state: 'ready', versions: ['v1.12.11'] },
    });

    // Assert
    const blocks = view.blocks as Record<string, unknown>[];
    expect(view).toMatchObject({ type: 'modal', callback_id: 'talos-guided-upgrade', submit: { text: 'Plan the upgrade' } });
    expect(blocks.map((b) => b.block_id).filter(Boolean)).toEqual(['cluster', 'version', 'version-links', 'review']);
    expect(blocks[1]).toMatchObject({ element: { type: 'static_select', action_id: 'cluster', initial_option: { value: 'production' } } });
    expect(blocks[2]).toMatchObject({ element: { type: 'static_select', action_id: 'version', options: [{ value: 'v1.12.11' }] } });
    expect(JSON.stringify(blocks[3])).toContain('<https://github.com/siderolabs/talos/releases/tag/v1.12.11|release notes>');
    expect((blocks[4]!.element as { options: { value: string }[] }).options.map((o) => o.value)).toEqual(ALL);
  });

  it('offers only what the rules allow from what runs, and ticks the staging item the records answer', () => {
    // Arrange
    const factory = ['v1.11.5', 'v1.11.6', 'v1.12.10', 'v1.12.11', 'v1.13.9'];
    const { allowed, refused } = nextTalosTargets('v1.11.6', offeredTalosVersions(factory), factory);
    const from = { cluster: 'production', versions: ['v1.11.6'], nodes: 3, refused, recommended: allowed[0]! };

    // Act
    const rehearsed = upgradeModal({
      form: talosForm,
      clusters: [production],
      channelCluster: 'production',
      versions: { state: 'ready', versions: allowed, from: { ...from, rehearsal: { stagingOp: 'op-0000aaaa11' } } },
    });
    const unrehearsed = upgradeModal({
      form: talosForm,
      clusters: [production],
      channelCluster: 'production',
      versions: { state: 'ready', versions: allowed, from },
    });

    // Assert
    const blocks = rehearsed.blocks as Record<string, unknown>[];
    const byId = (id: string) => JSON.stringify(blocks.find((b) => b.block_id === id));
    expect(allowed).toEqual(['v1.12.11']);
    expect(byId('versions-running')).toContain('*production* runs Talos v1.11.6 on all 3 nodes');
    expect(byId('versions-recommended')).toContain('*Recommended: v1.12.11*, upgraded on staging in `op-0000aaaa11`');
    expect(byId('versions-refused')).toContain('~v1.13.9~ v1.13.9 skips a minor release');
    expect(byId('version')).toContain('"text":"v1.12.11 (recommended)"');
    expect(byId('version')).not.toContain('v1.13.9');
    expect(blocks.find((b) => b.block_id === 'review')).toMatchObject({ element: { initial_options: [{ value: REHEARSED_ITEM }] } });
    expect(JSON.stringify(unrehearsed.blocks)).toContain('not yet upgraded on staging');
    expect(JSON.stringify(unrehearsed.blocks)).not.toContain('initial_options');
    expect(runningWords({ ...from, versions: ['v1.11.5', 'v1.11.6'] })).toContain('runs mixed Talos versions: v1.11.5, v1.11.6');
  });

  it('lists the nodes by name and address in the node picker', () => {
    // Act
    const view = nodePickerModal(formOf('node-rollback'), production);

    // Assert
    expect(JSON.stringify(view.blocks)).toContain('"text":"talos-prd-cp-2 (10.0.30.12)"},"value":"10.0.30.12"');
    expect(JSON.stringify(view.blocks)).toContain('"text":"10.0.30.13"},"value":"10.0.30.13"');
  });
});

describe('a submitted modal', () => {
  it('is the typed command once every review item is ticked', () => {
    // Act
    const typed = typedCommand(submitted('talos-upgrade', { cluster: 'production', version: 'v1.12.11', review: ALL }));

    // Assert
    expect(typed).toEqual({ text: 'upgrade talos v1.12.11 production', cluster: 'production' });
  });

  it('names the unticked items and a missing version as errors under their inputs', () => {
    // Act
    const typed = typedCommand(submitted('talos-upgrade', { cluster: 'production', review: ALL.slice(0, 3) }));

    // Assert
    expect(typed).toEqual({
      errors: {
        review:
          'Tick every review item before planning; still open: system-extension compatibility checked; the exact target tested in staging.',
        version: 'Choose the target version.',
      },
    });
  });

  it('refuses a view the bot did not open', () => {
    // Act
    const typed = typedCommand({ private_metadata: '{"kind":"reboot-everything"}', state: { values: {} } });

    // Assert
    expect(typed).toEqual({ errors: { cluster: 'This form is not one the bot opened. Run the command again.' } });
  });

  it('of the node picker is the typed rollback', () => {
    // Act
    const typed = typedCommand(submitted('node-rollback', { node: '10.0.30.12' }));

    // Assert
    expect(typed).toEqual({ text: 'rollback 10.0.30.12 production', cluster: 'production' });
  });

  it('of the node picker is the typed replacement', () => {
    // Act
    const typed = typedCommand(submitted('node-replace', { node: '10.0.30.12' }));

    // Assert
    expect(typed).toEqual({ text: 'replace 10.0.30.12 production', cluster: 'production' });
  });
});

describe('nodes by name', () => {
  it('without node lists, the picker takes a typed address', () => {
    // Arrange
    const unlisted = parseInventory(
      'clusters:\n  production:\n    environment: production\n    channel: C0MAINTPRD\n    terraformDir: /srv/tf\n    installerPlatform: nocloud\n    hostLabel: h\n    snapshotDir: /var/b\n    operators: [U0ALICE]\n    approvers: [U0CAROL]\n',
      'clusters.yaml',
    ).clusters[0]!;

    // Act / Assert
    expect(JSON.stringify(nodePickerModal(formOf('node-remove'), unlisted))).toContain('"type":"plain_text_input","action_id":"node"');
  });

  it('without node lists, the picker lists the nodes the last look saw, by name, with a typed address beside', () => {
    // Arrange
    const unlisted = parseInventory(
      'clusters:\n  production:\n    environment: production\n    channel: C0MAINTPRD\n    terraformDir: /srv/tf\n    installerPlatform: nocloud\n    hostLabel: h\n    snapshotDir: /var/b\n    operators: [U0ALICE]\n    approvers: [U0CAROL]\n',
      'clusters.yaml',
    ).clusters[0]!;
    const look = {
      controlPlanes: ['10.0.30.11'],
      workers: ['10.0.30.21', '10.0.30.22'],
      nodeNames: { '10.0.30.11': 'talos-prd-cp-1', '10.0.30.21': 'talos-prd-w-1' },
      observedAt: '2026-12-05T03:51:00.000Z',
    };

    // Act
    const view = nodePickerModal(formOf('node-remove'), unlisted, look, new Date('2026-12-05T03:54:00.000Z')) as {
      blocks: Record<string, unknown>[];
    };
    const typed = {
      private_metadata: JSON.stringify({ kind: 'node-remove', cluster: 'production' }),
      state: { values: { 'typed-node': { 'typed-node': { type: 'plain_text_input', value: ' 10.0.30.23 ' } } } },
    };

    // Assert: a named node is chosen by its name, so the preflight checks its address still carries it.
    const select = view.blocks.find((b) => b.block_id === 'node') as {
      optional?: boolean;
      element: { options: { text: { text: string }; value: string }[] };
    };
    expect(select.optional).toBe(true);
    expect(select.element.options.map((o) => [o.text.text, o.value])).toEqual([
      ['talos-prd-cp-1 (10.0.30.11)', 'talos-prd-cp-1'],
      ['talos-prd-w-1 (10.0.30.21)', 'talos-prd-w-1'],
      ['10.0.30.22', '10.0.30.22'],
    ]);
    expect(JSON.stringify(view.blocks)).toContain('the last look at the cluster saw them, 3 min ago');
    expect(view.blocks.some((b) => b.block_id === 'typed-node' && b.optional === true)).toBe(true);
    expect(typedCommand(typed)).toEqual({ text: 'remove 10.0.30.23 production', cluster: 'production' });
    expect(typedCommand({ ...typed, state: { values: {} } })).toEqual({ errors: { node: 'Choose a node.' } });
  });

  it('refuses an inventory naming a node the cluster does not have, or one name twice', () => {
    // Act / Assert
    // Both lists given: they say which addresses are nodes (with workers left out, a name may be a worker's).
    expect(() => inventory('    workers: []\n    nodeNames: {10.0.30.99: ghost}\n')).toThrow(/10.0.30.99 is not a node of this cluster/);
    expect(() => inventory('    nodeNames: {10.0.30.11: cp, 10.0.30.12: cp}\n')).toThrow(/cp also names 10.0.30.11/);
  });
});

describe('/talos help', () => {
  it('groups the commands by intent and says the user role on each cluster, with two commands to try', () => {
    // Act
    const alice = helpFor(inv, 'U0ALICE');
    const carol = helpFor(inv, 'U0CAROL');
    const eve = helpFor(inv, 'U0EVE');

    // Assert
    const sections = alice.split('\n').filter((l) => l.startsWith('*'));
    expect(sections.map((l) => l.split(/[ *:(]/).filter(Boolean)[0])).toEqual(['`/talos`', 'Look', 'Change', 'Manage', 'You', 'Try']);
    expect(alice).toContain('• *production* (<#C0MAINTPRD>): operator');
    expect(alice).toContain('`/talos upgrade talos` (in <#C0MAINTPRD>: a form with the releases)');
    expect(carol).toContain('• *production* (<#C0MAINTPRD>): approver');
    expect(eve).toContain('neither operator nor approver: you can look');
    expect(eve).toContain('*Try*: `/talos health production` (in <#C0MAINTPRD>) or `/talos status`');
  });
});
