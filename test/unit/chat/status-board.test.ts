import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import { ACTION } from '../../../src/chat/buttons.ts';
import { operationRootMessage } from '../../../src/chat/operation-root.ts';
import { outcomeLine, roughDuration, stopAfterNonce } from '../../../src/chat/status-board.ts';
import { talosUpgradeTexts } from '../../../jobs/playbooks/talos-upgrade/texts.ts';
import { presentationOf } from '../../../jobs/playbooks/index.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { blockKitProblems } from '../../support/block-kit-limits.ts';
import { anOperation } from '../../support/builders.ts';

const STARTED = '2026-11-29T22:05:00.000Z';
const NOW = new Date('2026-11-29T22:29:00.000Z');

function node(id: string, n: number, fields: Partial<Step> = {}): Step {
  return { id, kind: 'upgrade-control-plane', node: `10.0.30.1${n}`, nodeName: `talos-prd-cp-${n}`, status: 'pending', ...fields };
}

/** A production upgrade: snapshot done, cp-1 done in 6 min, cp-2 rebooting since 22:27, cp-3 to go. */
function running(fields: Partial<Operation> = {}): Operation {
  return anOperation({
    state: 'running',
    rootTs: '1700000000.000100',
    startedBy: 'U0BOB',
    startedAt: STARTED,
    steps: [
      {
        id: 'snapshot',
        kind: 'snapshot',
        status: 'done',
        startedAt: STARTED,
        endedAt: '2026-11-29T22:05:20.000Z',
        detail: 'snapshot taken',
      },
      node('node-1', 1, {
        status: 'done',
        startedAt: '2026-11-29T22:06:00.000Z',
        endedAt: '2026-11-29T22:12:00.000Z',
        detail: 'now v1.12.1',
      }),
      node('node-2', 2, { status: 'running', startedAt: '2026-11-29T22:20:00.000Z' }),
      node('node-3', 3),
    ],
    phase: {
      step: 'node-2',
      text: 'rebooting talos-prd-cp-2',
      detail: 'talosctl: connection refused; Kubernetes: not Ready',
      since: '2026-11-29T22:27:00.000Z',
    },
    ...fields,
  });
}

interface Element {
  action_id?: string;
  value?: string;
  text?: string | { text?: string };
  confirm?: { title: { text: string }; text: { text: string }; confirm: { text: string }; deny: { text: string } };
}
type AnyBlock = { type: string; block_id?: string; text?: { text?: string }; elements?: Element[] };

const blocksOf = (message: ChatMessage): AnyBlock[] => message.blocks as AnyBlock[];
const texts = (message: ChatMessage): string[] =>
  blocksOf(message).map(
    (b) => b.text?.text ?? (b.elements ?? []).map((e) => (typeof e.text === 'string' ? e.text : (e.text?.text ?? ''))).join(' '),
  );
const buttons = (message: ChatMessage): (Element & { blockId?: string })[] =>
  blocksOf(message).flatMap((b) => (b.elements ?? []).filter((e) => e.action_id !== undefined).map((e) => ({ ...e, blockId: b.block_id })));

describe('the status board of a running operation', () => {
  it('shows the step in progress, what it waits on and for how long, and the time so far', () => {
    const message = operationRootMessage(running(), talosUpgradeTexts, NOW);

    const now = texts(message).find((t) => t.startsWith('⏳ *Now:*'));
    expect(now).toMatch(
      /^⏳ \*Now:\* .*talos-prd-cp-2.*: rebooting talos-prd-cp-2, 2 min \(since <!date\^\d+\^\{date_short_pretty\} \{time\}\|2026-11-29 22:27 UTC>\)/,
    );
    expect(now).toContain('*Time so far:* 24 min (since <!date^');
    expect(texts(message)).toContain('talosctl: connection refused; Kubernetes: not Ready');
  });

  it('lists each finished step with its duration, not its detail', () => {
    const steps = texts(operationRootMessage(running(), talosUpgradeTexts, NOW)).find((t) => t.startsWith('*Steps*'))!;

    expect(steps).toMatch(/✅ 2\. [^\n]*talos-prd-cp-1[^\n]* · 6 min\n/);
    expect(steps).toMatch(/✅ 1\. [^\n]* · under a minute\n/);
    expect(steps).not.toContain('now v1.12.1');
    expect(steps).toMatch(/⏳ 3\. [^\n]*talos-prd-cp-2[^\n]*\n▫️ 4\./);
  });

  it('offers Stop after this node, naming the running step in its nonce, with a confirm that says what it stops', () => {
    const op = running();
    const [stop] = buttons(operationRootMessage(op, talosUpgradeTexts, NOW));

    const nonce = `s2t${Date.parse('2026-11-29T22:20:00.000Z').toString(36)}`;
    expect(stopAfterNonce(op)).toBe(nonce);
    expect(stop).toMatchObject({ action_id: ACTION.stopAfter, value: `${op.id}.${nonce}`, blockId: `board-${op.id}-${nonce}` });
    expect(stop!.text).toMatchObject({ text: 'Stop after this node' });
    expect(stop!.confirm?.title.text).toBe('Stop after this node?');
    expect(stop!.confirm?.text.text).toMatch(
      /talos-prd-cp-2.* finishes as it would .*then the operation stops and \*production\* is free\. The 1 step after it will not start\./,
    );
    expect(stop!.confirm?.confirm.text).toBe('Stop after it');
  });

  it('draws the same board from the stored operation, whatever the run that draws it', () => {
    const stored = JSON.parse(JSON.stringify(running())) as Operation;

    expect(operationRootMessage(stored, talosUpgradeTexts, NOW)).toEqual(operationRootMessage(running(), talosUpgradeTexts, NOW));
  });

  it('a new step of the same node (a Retry) gets a new nonce, so a Stop from the earlier board is stale', () => {
    const again = running({ steps: running().steps.map((s) => (s.id === 'node-2' ? { ...s, startedAt: '2026-11-29T22:40:00.000Z' } : s)) });

    expect(stopAfterNonce(again)).not.toBe(stopAfterNonce(running()));
  });

  it('shows the stop asked for instead of the button, and no phase of a step that ended', () => {
    const stopping = operationRootMessage(running({ cancelRequestedBy: 'U0ALICE' }), talosUpgradeTexts, NOW);
    expect(buttons(stopping).filter((b) => b.action_id === ACTION.stopAfter)).toEqual([]);
    expect(texts(stopping).join('\n')).toMatch(/⏹ Stopping after .*talos-prd-cp-2.*, as <@U0ALICE> asked: no later step starts\./);

    const stale = operationRootMessage(
      running({ phase: { step: 'node-1', text: 'draining talos-prd-cp-1', since: STARTED } }),
      talosUpgradeTexts,
      NOW,
    );
    expect(texts(stale).join('\n')).not.toContain('draining');
    expect(texts(stale).find((t) => t.startsWith('⏳ *Now:*'))).toMatch(/talos-prd-cp-2.*: in progress, 9 min/);
  });

  it('names the approval it waits on and when it expires; no Stop button there (the request has its own)', () => {
    const op = running({
      state: 'awaiting-approval',
      phase: undefined,
      steps: running().steps.map((s) => (s.id === 'node-2' ? { ...s, status: 'pending', startedAt: undefined } : s)),
      approvals: [
        { step: 'node-2', nonce: 'appr1', messageTs: '1.2', requestedAt: STARTED, expiresAt: '2026-11-29T23:50:00.000Z', state: 'pending' },
      ],
    });
    const message = operationRootMessage(op, talosUpgradeTexts, NOW);

    expect(texts(message).find((t) => t.startsWith('⏸ *Now:*'))).toMatch(
      /waiting for an approver to approve .*talos-prd-cp-2.*, expires <!date\^\d+\^\{date_short_pretty\} \{time\}\|2026-11-29 23:50 UTC>/,
    );
    expect(buttons(message)).toEqual([]);
  });
});

describe('a finished root leads with the outcome and the duration', () => {
  it('completed', () => {
    const op = running({
      state: 'completed',
      endedAt: '2026-11-29T22:29:00.000Z',
      phase: undefined,
      steps: running().steps.map((s) => ({ ...s, status: 'done', startedAt: s.startedAt ?? STARTED, endedAt: s.endedAt ?? STARTED })),
    });
    const message = operationRootMessage(op, talosUpgradeTexts);

    expect(texts(message)[0]).toBe('*✅ completed in 24 min: Talos upgrade v1.11.6 → v1.12.1: production on 3 nodes*');
    expect(blocksOf(message)[1]?.type).toBe('header');
    expect(message.text).toBe(`✅ completed in 24 min: Talos upgrade v1.11.6 → v1.12.1: production on 3 nodes (${op.id})`);
    expect(buttons(message)).toEqual([]);
  });

  it('stopped at the first failure, at the failed node', () => {
    const op = running({
      state: 'failed',
      endedAt: '2026-11-29T22:14:00.000Z',
      reason: 'the health gate after talos-prd-cp-2 failed',
      steps: running().steps.map((s) =>
        s.id === 'node-2' ? { ...s, status: 'failed', endedAt: '2026-11-29T22:14:00.000Z', detail: 'gate failed' } : s,
      ),
    });

    expect(outcomeLine(op, talosUpgradeTexts)).toMatch(
      /^❌ stopped at the first failure after 9 min, at .*talos-prd-cp-2.*: the health gate after talos-prd-cp-2 failed$/,
    );
  });

  it('cancelled after a node, keeping who asked as a mention and naming what did not start', () => {
    const op = running({
      state: 'cancelled',
      endedAt: '2026-11-29T22:14:00.000Z',
      cancelRequestedBy: 'U0ALICE',
      reason: 'cancelled by <@U0ALICE> between steps',
      steps: running().steps.map((s) => (s.id === 'node-2' ? { ...s, status: 'done', endedAt: '2026-11-29T22:13:00.000Z' } : s)),
    });
    const message = operationRootMessage(op, talosUpgradeTexts);

    expect(texts(message)[0]).toMatch(
      /^\*🚫 cancelled after 9 min, after .*talos-prd-cp-2.*: cancelled by <@U0ALICE> between steps; 1 step not started\*$/,
    );
    expect(message.text.startsWith('🚫 cancelled after 9 min')).toBe(true);
  });

  it('a plan cancelled before it started says so, without a duration', () => {
    const op = anOperation({ state: 'cancelled', reason: 'cancelled by <@U0ALICE>' });

    expect(outcomeLine(op, talosUpgradeTexts)).toBe('🚫 cancelled before it started: cancelled by <@U0ALICE>');
  });

  it('escapes what a reason carries from outside, but the mentions the bot wrote', () => {
    const op = running({ state: 'failed', endedAt: NOW.toISOString(), reason: 'talosctl said <!channel> & <@U0EVE>' });

    expect(outcomeLine(op, talosUpgradeTexts)).toContain('talosctl said &lt;!channel&gt; &amp; <@U0EVE>');
  });
});

describe('a long operation keeps the board within Block Kit limits', () => {
  const many = (count: number, runningAt: number): Step[] =>
    Array.from({ length: count }, (_, i) =>
      node(`node-${i}`, i, {
        nodeName: `talos-prd-w-${i}`,
        kind: 'upgrade-worker',
        status: i < runningAt ? 'done' : i === runningAt ? 'running' : 'pending',
        startedAt: i <= runningAt ? '2026-11-29T22:00:00.000Z' : undefined,
        endedAt: i < runningAt ? '2026-11-29T22:06:00.000Z' : undefined,
        detail: 'x'.repeat(500),
      }),
    );

  it.each(['running', 'awaiting-approval', 'completed', 'cancelled', 'failed'] as const)('200 steps, %s', (state) => {
    const op = running({
      state,
      steps: many(200, 120),
      endedAt: NOW.toISOString(),
      phase: { step: 'node-120', text: 'y'.repeat(5000), detail: 'z'.repeat(5000), since: STARTED },
    });
    const message = operationRootMessage(op, presentationOf('talos-upgrade'), NOW);

    expect(blockKitProblems(message)).toEqual([]);
    const steps = texts(message).find((t) => t.startsWith('*Steps*'))!;
    // Older finished steps in one line, the last three one by one, then the step in progress and the next three.
    expect(steps).toContain('✅ 117 earlier steps done in 11 h 42 min (worker talos-prd-w-0');
    expect(steps.split('\n').filter((l) => /^✅ \d+\. /.test(l))).toHaveLength(3);
    expect(steps).toMatch(/⏳ 121\. /);
    expect(steps).toContain('▫️ 76 more steps to go');
    expect(steps.endsWith('…')).toBe(false);
  });

  it('rough durations read at a glance', () => {
    expect([30_000, 6 * 60_000, 89 * 60_000, 125 * 60_000].map(roughDuration)).toEqual(['under a minute', '6 min', '89 min', '2 h 5 min']);
  });
});
