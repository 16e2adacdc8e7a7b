import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assetChunks } from '../sim/image-factory.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { approveUntilDone, clickStart, requestUpgrade, tickAll, waitForRootState } from '../support/upgrade-flow.ts';

// The runbook's follow-up of a Talos upgrade: talos_version moved to what runs, applied only once an approver
// ticked that the ISO at the static Proxmox file ID matches the sha256 the bot computed from its own download.

const TARGET = 'v1.12.11';
const APPLY = 'talos-op-start';
const TICK = 'talos-op-start-confirm';
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 120_000);

afterAll(async () => {
  await h?.stop();
});

function applies(cluster: string) {
  return h.sim.calls.filter((c) => c.bin === 'tofu' && c.cluster === cluster && c.argv[0] === 'apply');
}

/** The sha256 of the ISO the simulated factory serves, computed here from its bytes, not read from the bot. */
function isoSha256(schematic: string, version: string): string {
  const hash = createHash('sha256');
  for (const chunk of assetChunks(schematic, version, 'nocloud-amd64.iso')) hash.update(chunk);
  return hash.digest('hex');
}

describe('the Terraform follow-up of a Talos upgrade', () => {
  it('shows the ISO URL and its full sha256, refuses Apply until the approver ticks that the uploaded ISO matches, and records the hash and who ticked', async () => {
    // Arrange: staging upgrades Talos through Slack, then the commit moves talos_version to what now runs.
    const upgrade = await requestUpgrade(h, `upgrade talos ${TARGET}`, { channel: CHANNELS.staging });
    await clickStart(h, upgrade, USERS.alice, CHANNELS.staging);
    const upgraded = await approveUntilDone(h, upgrade, CHANNELS.staging);
    expect(upgraded.text).toContain('completed');
    await waitForSettled(h);
    const followUp = h.slack.thread(CHANNELS.staging, upgrade.root.ts).find((m) => m.text.includes('Terraform follow-up'));
    await h.sim.terraform.setTalosVersion('staging', TARGET);
    await h.sim.terraform.commit(`staging: talos_version ${TARGET}`);
    const schematic = h.sim.cluster('staging').terraform.defaultSchematic;
    const sha256 = isoSha256(schematic, TARGET);
    const url = `${h.env['IMAGE_FACTORY_URL']?.replace(/\/+$/, '')}/image/${schematic}/${TARGET}/nocloud-amd64.iso`;
    const p = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    const planned = await waitForRootState(h, p, /waiting for an approver's Apply/, CHANNELS.staging);
    const before = applies('staging').length;

    // Act: Apply without the tick.
    await h.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: p.root.ts, actionId: APPLY });
    const refusal = await h.slack.waitFor(
      () => h.slack.ephemerals(CHANNELS.staging, USERS.carol).find((e) => e.text.includes('isos:iso/talos-nocloud-amd64.iso')),
      { description: 'the refused Apply' },
    );
    await waitForSettled(h);
    const untouched = await storedOperation(h, p.opId);
    const appliesBetween = applies('staging').length;

    // Act: Apply with the tick.
    const ticks = tickAll(h, CHANNELS.staging, p.root.ts);
    await h.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: p.root.ts, actionId: APPLY, ticks });
    const done = await waitForRootState(h, p, /completed|stopped|failed/, CHANNELS.staging, 120_000);
    await waitForSettled(h);

    // Assert: the upgrade's follow-up gives the ISO's whole hash as a ready `sha256sum -c` line.
    expect(followUp?.text).toContain(`echo '${sha256}  talos-nocloud-amd64.iso' | sha256sum -c`);
    // Assert: the card shows the URL and the whole hash, and the checkbox bound to that hash.
    const shown = JSON.stringify(planned.blocks);
    expect(shown).toContain(url);
    expect(shown).toContain(`\`${sha256}\``);
    expect(ticks).toEqual({ [TICK]: [`iso-sha256:${sha256}`] });
    expect(shown).toContain('the ISO at isos:iso/talos-nocloud-amd64.iso matches this sha256');
    // Without the tick: refused, nothing changed.
    expect(refusal.text).toContain('Tick “the ISO at isos:iso/talos-nocloud-amd64.iso matches this sha256”');
    expect(refusal.text).toContain('Nothing changed.');
    expect(untouched.state).toBe('planned');
    expect(untouched.audit.some((e) => e.event === 'applied')).toBe(false);
    expect(appliesBetween).toBe(before);
    // With it: applied, and the record keeps the full hash and who ticked it.
    expect(done.text).toContain('completed');
    const op = await storedOperation(h, p.opId);
    expect(op.data?.['terraform']).toMatchObject({ iso: { url, sha256, file: 'isos:iso/talos-nocloud-amd64.iso' } });
    expect(op.startedBy).toBe(USERS.carol);
    expect(op.confirmedReview).toContain(`the ISO at isos:iso/talos-nocloud-amd64.iso matches sha256 ${sha256} (${url})`);
    expect(op.audit.find((e) => e.event === 'applied')).toMatchObject({ actor: USERS.carol, detail: expect.stringContaining(sha256) });
    expect(applies('staging')).toHaveLength(before + 1);
    // No message cuts the hash a person compares.
    const posted = [h.slack.message(CHANNELS.staging, p.root.ts), ...h.slack.thread(CHANNELS.staging, p.root.ts)]
      .map((m) => JSON.stringify(m?.blocks ?? m?.text ?? ''))
      .join('\n');
    expect(posted).toContain(sha256);
    expect(posted).not.toContain(`${sha256.slice(0, 12)}…`);
  }, 420_000);
});

describe('a node the apply creates', () => {
  it('is checked to run the declared Talos version and schematic once it joins: a VM that booted an older ISO stops the apply at its join', async () => {
    // Arrange: the ISO uploaded at the static file ID is an older build than talos_version declares.
    const declared = h.sim.cluster('staging').terraform.talosVersion;
    h.sim.faults.set('staging', { staleIso: { version: 'v1.11.5' } });
    await h.sim.terraform.addNode('staging', { hostname: 'talos-stg-w-3', address: '10.0.20.23', role: 'worker', host: 'pve1' });
    await h.sim.terraform.commit('add talos-stg-w-3');
    const p = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    await waitForRootState(h, p, /waiting for an approver's Apply/, CHANNELS.staging);

    // Act
    const ticks = tickAll(h, CHANNELS.staging, p.root.ts);
    await h.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: p.root.ts, actionId: APPLY, ticks });
    const done = await waitForRootState(h, p, /completed|stopped|failed/, CHANNELS.staging, 120_000);
    await waitForSettled(h);
    h.sim.faults.clear('staging', 'staleIso');

    // Assert
    expect(done.text).toContain('stopped');
    const op = await storedOperation(h, p.opId);
    expect(op.data?.['terraform']).toMatchObject({ iso: { because: 'it creates the VM of talos-stg-w-3' } });
    const join = op.steps.find((s) => s.kind === 'node-join');
    expect(join?.status).toBe('failed');
    expect(join?.detail).toContain(`it runs Talos v1.11.5, not the declared ${declared} (talos_version)`);
    expect(op.steps.find((s) => s.kind === 'apply-gate')?.status).toBe('pending');
  }, 300_000);
});
