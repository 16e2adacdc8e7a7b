import { describe, expect, it } from 'vitest';
import { HOME_MAX_BLOCKS, type HomeCluster, homeView } from '../../../src/home/home-view.ts';
import { HOME_ACTION } from '../../../src/chat/buttons.ts';
import type { Block } from '../../../src/port/chat-port.ts';
import { validateBlocks } from '../../slack-emulator/block-validation.ts';

const NOW = new Date('2026-11-30T10:00:00.000Z');
const LINK = 'https://talos-test.slack.com/archives/C0MAINTPRD/p1764496800000100';
const REQUEST_LINK = 'https://talos-test.slack.com/archives/C0MAINTPRD/p1764497000000300?thread_ts=1764496800.000100&cid=C0MAINTPRD';

/** A Slack date token: each reader sees the time in their own zone, with a UTC fallback to the minute. */
function token(iso: string): string {
  const date = new Date(iso);
  return `<!date^${date.getTime() / 1000}^{date_short_pretty} {time}|${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC>`;
}

const production: HomeCluster = {
  name: 'production',
  environment: 'production',
  channel: 'C0MAINTPRD',
  talos: { versions: ['v1.11.5'], at: '2026-11-30T09:40:00.000Z', source: 'health gate' },
  kubernetes: { versions: ['v1.34.1'], at: '2026-11-30T09:40:00.000Z', source: 'health gate' },
  lock: {
    opId: 'op-1a2b3c4d5e',
    what: 'Talos upgrade',
    state: 'awaiting-approval',
    target: 'v1.12.11',
    by: 'U0ALICE',
    since: '2026-11-30T09:45:00.000Z',
    link: LINK,
  },
  approvals: [
    {
      opId: 'op-1a2b3c4d5e',
      what: 'control plane talos-prd-cp-1 (10.0.30.11)',
      requestedAt: '2026-11-30T09:50:00.000Z',
      expiresAt: '2026-11-30T10:20:00.000Z',
      link: REQUEST_LINK,
    },
  ],
  lastGate: { passed: true, at: '2026-11-30T09:40:00.000Z', stopReasons: [] },
};

const staging: HomeCluster = { name: 'staging', environment: 'staging', channel: 'C0MAINTSTG', approvals: [] };

function text(blocks: unknown): string {
  return JSON.stringify(blocks);
}

describe('homeView', () => {
  it('is a Home view with every cluster, its environment and its channel', () => {
    // Act
    const view = homeView([production, staging], NOW);

    // Assert
    expect(view.type).toBe('home');
    const sections = view.blocks.filter((b) => b.type === 'section').map((b) => (b.text as { text?: string } | undefined)?.text);
    expect(sections).toContain('*production* · production · <#C0MAINTPRD>');
    expect(sections).toContain('*staging* · staging · <#C0MAINTSTG>');
  });

  it('shows the versions with where and when they were read, the lock holder linked to its thread, the approval waiting and the last gate', () => {
    // Act
    const shown = text(homeView([production], NOW).blocks);

    // Assert
    expect(shown).toContain(JSON.stringify(`*Talos*\nv1.11.5\n_health gate, ${token('2026-11-30T09:40:00.000Z')}_`).slice(1, -1));
    expect(shown).toContain(JSON.stringify(`*Kubernetes*\nv1.34.1\n_health gate, ${token('2026-11-30T09:40:00.000Z')}_`).slice(1, -1));
    expect(shown).toContain(
      JSON.stringify(
        `*Lock*\n:lock: <${LINK}|\`op-1a2b3c4d5e\`> Talos upgrade v1.12.11, awaiting-approval\nby <@U0ALICE> since ${token('2026-11-30T09:45:00.000Z')}`,
      ).slice(1, -1),
    );
    expect(shown).toContain(
      JSON.stringify(
        `*Approvals waiting*\n• <${REQUEST_LINK}|control plane talos-prd-cp-1 (10.0.30.11)> (\`op-1a2b3c4d5e\`), asked ${token('2026-11-30T09:50:00.000Z')}, expires ${token('2026-11-30T10:20:00.000Z')}`,
      ).slice(1, -1),
    );
    expect(shown).toContain(JSON.stringify(`*Last health gate*\n✅ passed ${token('2026-11-30T09:40:00.000Z')}`).slice(1, -1));
  });

  it('says what is not known yet, and that a cluster without an operation is free', () => {
    // Act
    const shown = text(homeView([staging], NOW).blocks);

    // Assert
    expect(shown).toContain('*Lock*\\nfree');
    expect(shown).toContain('*Talos*\\n_not read yet: run `/talos health`_');
    expect(shown).toContain('*Last health gate*\\n_none recorded_');
    expect(shown).not.toContain('Approvals waiting');
  });

  it('lists why a failed gate stopped, escaped, and marks a cluster running two versions', () => {
    // Arrange
    const failing: HomeCluster = {
      ...staging,
      talos: { versions: ['v1.11.5', 'v1.12.11'], at: '2026-11-30T09:00:00.000Z', source: 'health gate' },
      lastGate: {
        passed: false,
        at: '2026-11-30T09:00:00.000Z',
        stopReasons: ['etcd has no leader on 10.0.20.11', 'Flux <apps> stalled & not ready'],
      },
    };

    // Act
    const shown = text(homeView([failing], NOW).blocks);

    // Assert
    expect(shown).toContain('v1.11.5, v1.12.11 (mixed)');
    expect(shown).toContain(
      `❌ failed ${token('2026-11-30T09:00:00.000Z')}\\n• etcd has no leader on 10.0.20.11\\n• Flux &lt;apps&gt; stalled &amp; not ready`,
    );
  });

  it("passes Slack's Home validation", () => {
    // Act
    const view = homeView([production, staging], NOW);

    // Assert
    expect(validateBlocks(view.blocks, { maxBlocks: HOME_MAX_BLOCKS })).toMatchObject({ ok: true });
  });

  it('stays within 100 blocks however many clusters there are, naming those it leaves out', () => {
    // Arrange
    const many = Array.from({ length: 40 }, (_, i) => ({ ...production, name: `cluster-${String(i).padStart(2, '0')}` }));

    // Act
    const view = homeView(many, NOW);

    // Assert
    expect(view.blocks.length).toBeLessThanOrEqual(HOME_MAX_BLOCKS);
    expect(validateBlocks(view.blocks, { maxBlocks: HOME_MAX_BLOCKS })).toMatchObject({ ok: true });
    const shownNames = many.filter((c) => text(view.blocks).includes(`*${c.name}*`)).map((c) => c.name);
    const note = text(view.blocks.at(-1));
    expect(shownNames.length).toBeGreaterThan(20);
    expect(many.slice(shownNames.length).every((c) => note.includes(c.name))).toBe(true);
    expect(note).toContain(`${many.length - shownNames.length} more cluster(s) not shown here`);
  });

  it('uses all 100 blocks when the clusters fit exactly, without a note', () => {
    // Arrange: a header and a context, then 4 blocks for a cluster with an approval, 3 for one without: 2 + 2 × 4 + 30 × 3 = 100.
    const clusters = [
      ...Array.from({ length: 2 }, (_, i) => ({ ...production, name: `busy-${i}` })),
      ...Array.from({ length: 30 }, (_, i) => ({ ...staging, name: `quiet-${i}` })),
    ];

    // Act
    const view = homeView(clusters, NOW);

    // Assert
    expect(view.blocks).toHaveLength(HOME_MAX_BLOCKS);
    expect(text(view.blocks)).not.toContain('not shown here');
    expect(text(view.blocks)).toContain('*quiet-29*');
  });

  describe("the operators' buttons", () => {
    type Button = { action_id: string; value: string; confirm?: unknown };
    const buttonsOf = (blocks: Block[], cluster: string): Button[] =>
      blocks.filter((b) => b.type === 'actions' && b.block_id === `home-actions-${cluster}`).flatMap((b) => b.elements as Button[]);

    it('gives a cluster the viewer operates the gate, both upgrades and a confirmed snapshot, valued with its name', () => {
      // Act
      const view = homeView([{ ...production, actable: true }, staging], NOW);

      // Assert
      const buttons = buttonsOf(view.blocks, 'production');
      expect(buttons.map((b) => [b.action_id, b.value])).toEqual([
        [HOME_ACTION.gate, 'production'],
        [HOME_ACTION.upgradeTalos, 'production'],
        [HOME_ACTION.upgradeK8s, 'production'],
        [HOME_ACTION.snapshot, 'production'],
      ]);
      expect(buttons.find((b) => b.action_id === HOME_ACTION.snapshot)?.confirm).toBeDefined();
      expect(buttons.filter((b) => b.action_id !== HOME_ACTION.snapshot).every((b) => b.confirm === undefined)).toBe(true);
      expect(validateBlocks(view.blocks, { maxBlocks: HOME_MAX_BLOCKS })).toMatchObject({ ok: true });
    });

    it('gives no buttons to a cluster the viewer does not operate, nor to a withheld one', () => {
      // Act
      const view = homeView([production, { ...staging, actable: false }], NOW);

      // Assert
      expect(view.blocks.some((b) => b.type === 'actions')).toBe(false);
    });

    it('counts the buttons within the 100 blocks, never cutting a cluster from its buttons', () => {
      // Arrange
      const many = Array.from({ length: 40 }, (_, i) => ({ ...production, name: `cluster-${String(i).padStart(2, '0')}`, actable: true }));

      // Act
      const view = homeView(many, NOW);

      // Assert
      expect(view.blocks.length).toBeLessThanOrEqual(HOME_MAX_BLOCKS);
      expect(validateBlocks(view.blocks, { maxBlocks: HOME_MAX_BLOCKS })).toMatchObject({ ok: true });
      const shown = many.filter((c) => text(view.blocks).includes(`*${c.name}*`));
      expect(shown.length).toBeGreaterThan(10);
      expect(shown.every((c) => buttonsOf(view.blocks, c.name).length === 4)).toBe(true);
    });
  });
});
