import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REVIEW_ITEMS } from '../../jobs/playbooks/talos-upgrade/texts.ts';
import type { JsonObject, OpenedModal } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';

// Guided commands through the bot process: `/talos upgrade talos` without a version opens a modal
// (views.open within the trigger's deadline, then the Image Factory releases by views.update), and
// its submission runs the typed command's path. Alice operates staging only; Bob both clusters.

let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    inventory: { operators: { staging: [USERS.alice, USERS.bob], production: [USERS.bob] } },
  });
});

afterAll(async () => {
  await h?.stop();
});

/** The Talos upgrade's review as its texts declare it: the form's checkboxes are the items its Start records. */
const ALL_REVIEWED = [...REVIEW_ITEMS];

/** Sends `/talos <text>` and waits for the modal it opens, with Image Factory's releases in it. */
async function openUpgradeModal(user: string, channel: string): Promise<OpenedModal> {
  const before = h.slack.modals(user).length;
  const delivered = await h.slack.sendSlashCommand({ user, channel, text: 'upgrade talos' });
  expect(delivered.timedOut).toBe(false);
  return h.slack.waitFor(
    () => {
      const modal = h.slack.modals(user)[before];
      return modal !== undefined && JSON.stringify(modal.view.blocks).includes('"block_id":"version"') ? modal : undefined;
    },
    { timeoutMs: 20_000, description: 'the upgrade modal with its versions' },
  );
}

function input(modal: OpenedModal, blockId: string): JsonObject {
  const block = (modal.view.blocks as JsonObject[]).find((b) => b.block_id === blockId);
  return (block?.element ?? {}) as JsonObject;
}

function values(element: JsonObject): string[] {
  return ((element.options as JsonObject[] | undefined) ?? []).map((o) => String(o.value));
}

function operationsIn(channel: string): number {
  return h.slack.channelMessages(channel).filter((m) => /\bop-[a-z0-9]+\b/.test(m.text)).length;
}

describe('/talos upgrade talos without a version', () => {
  it('opens a modal with the clusters the user operates, the releases with their notes, and the review as checkboxes', async () => {
    // Act
    const modal = await openUpgradeModal(USERS.alice, CHANNELS.staging);

    // Assert: opened inside the trigger's deadline (the emulator refuses a late or reused trigger), then updated.
    expect(h.slack.callsTo('views.open').at(-1)).toMatchObject({ ok: true });
    expect(h.slack.callsTo('views.update').at(-1)).toMatchObject({ ok: true });
    expect(modal.view.callback_id).toBe('talos-guided-upgrade');
    expect(modal.versions).toHaveLength(2);
    expect(JSON.stringify(modal.versions[0]!.blocks)).toContain('Asking Image Factory');
    const cluster = input(modal, 'cluster');
    expect(values(cluster)).toEqual(['staging']);
    expect(cluster.initial_option).toMatchObject({ value: 'staging' });
    expect(values(input(modal, 'version'))).toContain('v1.12.11');
    expect(JSON.stringify(modal.view.blocks)).toContain('https://github.com/siderolabs/talos/releases/tag/v1.12.11');
    expect(JSON.stringify(modal.view.blocks)).toContain('https://docs.siderolabs.com/talos/v1.12/getting-started/support-matrix');
    expect(input(modal, 'review')).toMatchObject({ type: 'checkboxes', action_id: 'review' });
    expect(values(input(modal, 'review'))).toEqual(ALL_REVIEWED);
    expect(h.slack.renderModal(modal.viewId)).toContain('☐ Cilium compatibility checked');
  });

  it('keeps the modal open while a review item is unticked, then plans exactly as the typed command does', async () => {
    // Arrange
    const modal = await openUpgradeModal(USERS.alice, CHANNELS.staging);
    const before = operationsIn(CHANNELS.staging);

    // Act: one item left unticked.
    const partial = await h.slack.submitView(USERS.alice, modal.viewId, { version: 'v1.12.11', review: ALL_REVIEWED.slice(1) });

    // Assert: the modal stays open, naming the open item; nothing was asked of the cluster.
    expect(partial.outcome).toBe('errors');
    expect(partial.errors.review).toContain('Talos release notes reviewed');
    expect(operationsIn(CHANNELS.staging)).toBe(before);

    // Act: every item ticked.
    const done = await h.slack.submitView(USERS.alice, modal.viewId, { review: ALL_REVIEWED });

    // Assert: the modal closed and the plan of a Talos upgrade to v1.12.11 appears in staging's channel.
    expect(done.outcome).toBe('closed');
    const root = await h.slack.waitFor(
      () =>
        h.slack.channelMessages(CHANNELS.staging).find((m, i, all) => i >= before && /planned|refused/.test(m.text) && all.length > before),
      { timeoutMs: 30_000, description: 'the plan' },
    );
    expect(root.text).toContain('v1.12.11');
    const reply = await h.slack.waitFor(() => h.slack.ephemerals(CHANNELS.staging, USERS.alice).find((e) => /op-[a-z0-9]+/.test(e.text)), {
      description: "the command's reply",
    });
    expect(root.text).toContain(/op-[a-z0-9]+/.exec(reply.text)![0]);
  });

  it('refuses a forged submission for a cluster the user does not operate, and starts nothing', async () => {
    // Arrange
    const modal = await openUpgradeModal(USERS.alice, CHANNELS.staging);
    const before = operationsIn(CHANNELS.production);

    // Act: the payload names production, which the modal never offered Alice.
    const forged = await h.slack.submitView(
      USERS.alice,
      modal.viewId,
      {},
      {
        stateValues: {
          cluster: { cluster: { type: 'static_select', selected_option: { value: 'production' } } },
          version: { version: { type: 'static_select', selected_option: { value: 'v1.12.11' } } },
          review: { review: { type: 'checkboxes', selected_options: ALL_REVIEWED.map((value) => ({ value })) } },
        },
      },
    );

    // Assert
    expect(forged.outcome).toBe('closed');
    const refusal = await h.slack.waitFor(
      () => h.slack.ephemerals(CHANNELS.production, USERS.alice).find((e) => e.text.includes('Only operators of *production*')),
      { description: 'the refusal' },
    );
    expect(refusal.text).toContain('Nothing was started');
    expect(operationsIn(CHANNELS.production)).toBe(before);
  });

  it('shows what runs and offers only the targets the rules allow, the recommended first, the others greyed with why', async () => {
    // Arrange: a health gate reads what staging runs.
    await h.command('health', { user: USERS.alice, channel: CHANNELS.staging });
    await h.slack.waitFor(() => h.slack.channelMessages(CHANNELS.staging).find((m) => /Health gate (passed|failed)/.test(m.text)), {
      timeoutMs: 60_000,
      description: "staging's gate verdict",
    });
    const running = h.sim.cluster('staging').nodes[0]!.talosVersion;

    // Act
    const modal = await openUpgradeModal(USERS.alice, CHANNELS.staging);

    // Assert: what runs leads; the select holds only allowed targets, the recommended one first and preselected.
    const blocks = modal.view.blocks as JsonObject[];
    const text = (id: string): string => JSON.stringify(blocks.find((b) => b.block_id === id) ?? {});
    expect(text('versions-running')).toMatch(new RegExp(`\\*staging\\* runs Talos ${running.replaceAll('.', '\\.')} on all \\d+ nodes`));
    const offered = values(input(modal, 'version'));
    expect(offered).toEqual(['v1.12.11']);
    expect(input(modal, 'version').initial_option).toMatchObject({ value: 'v1.12.11' });
    expect(text('versions-recommended')).toContain('Recommended: v1.12.11');
    expect(text('versions-recommended')).toContain('not yet upgraded on staging');
    // A release the rules refuse is named with the reason, struck through, and is no option.
    expect(text('versions-refused')).toMatch(/~v1\.13\.\d+~ v1\.13\.\d+ skips a minor release/);
  });

  it('opens nothing for someone who operates no cluster, and says why', async () => {
    // Act
    await h.slack.sendSlashCommand({ user: USERS.eve, channel: CHANNELS.staging, text: 'upgrade talos' });

    // Assert
    const reply = await h.slack.waitFor(() => h.slack.ephemerals(CHANNELS.staging, USERS.eve)[0], { description: 'the refusal' });
    expect(reply.text).toContain('you are an operator of none');
    expect(h.slack.modals(USERS.eve)).toEqual([]);
  });
});

describe('nodes by name', () => {
  it('takes a node by its inventory name, and lists the nodes by name and address for an unknown one', async () => {
    // Act
    const unknown = await h.command('rollback talos-stg-cp-9', { user: USERS.alice, channel: CHANNELS.staging });

    // Assert
    expect(unknown).toContain('talos-stg-cp-9 is not a node of *staging*');
    expect(unknown).toContain('talos-stg-cp-1 (10.0.20.204), talos-stg-w-1 (10.0.20.205)');
  });

  it('opens a node picker for /talos rollback without a node', async () => {
    // Act
    await h.slack.sendSlashCommand({ user: USERS.alice, channel: CHANNELS.staging, text: 'rollback' });
    const modal = await h.slack.waitFor(() => h.slack.modals(USERS.alice).find((m) => m.view.callback_id === 'talos-guided-node'), {
      description: 'the node picker',
    });

    // Assert
    expect(values(input(modal, 'node'))).toEqual(['10.0.20.204', '10.0.20.205']);
    expect(h.slack.renderModal(modal.viewId)).toContain('Roll back a node');
    expect(JSON.stringify(input(modal, 'node'))).toContain('talos-stg-cp-1 (10.0.20.204)');
  });
});
