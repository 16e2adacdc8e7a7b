import { beforeEach, describe, expect, it } from 'vitest';
import { liveBoard } from '../../../../jobs/engine/live-board.ts';
import type { Lifecycle } from '../../../../jobs/engine/lifecycle/lifecycle.ts';
import { ACTION } from '../../../../src/chat/buttons.ts';
import { stopAfterNonce } from '../../../../src/chat/status-board.ts';
import type { Operation, Step } from '../../../../src/ops/operation.ts';
import { pollUntil, systemClock } from '../../../../src/time/clock.ts';
import { engineFixture, type EngineFixture } from '../../../support/engine-fixture.ts';
import { useRedisFixture } from '../../../support/redis-fixture.ts';

const redis = useRedisFixture();
const ROOT = '1700000000.000100';

let f: EngineFixture;
let lifecycle: Lifecycle;

beforeEach(() => {
  f = engineFixture(redis);
  lifecycle = f.lifecycle();
});

const node = (id: string, n: number, fields: Partial<Step> = {}): Step => ({
  id,
  kind: 'upgrade-control-plane',
  node: `10.0.30.1${n}`,
  nodeName: `talos-prd-cp-${n}`,
  status: 'pending',
  ...fields,
});

/** A Talos upgrade whose first control plane is being upgraded. */
function upgrading(fields: Partial<Operation> = {}): Promise<Operation> {
  return f.operation({
    kind: 'talos-upgrade',
    rootTs: ROOT,
    startedAt: '2026-12-01T09:50:00.000Z',
    target: { version: 'v1.12.1', fromVersion: 'v1.11.6' },
    steps: [node('node-1', 1, { status: 'running', startedAt: '2026-12-01T09:55:00.000Z' }), node('node-2', 2)],
    ...fields,
  });
}

const stored = async (id: string): Promise<Operation> => (await f.deps.store.get(id))!;
const click = (op: Operation, nonce: string, user = 'U0ALICE') => ({ op, nonce, user, messageTs: ROOT });
const rootEdits = () => f.chat.edits.filter((e) => e.ts === ROOT);
const hasStopButton = (edit: { message: { blocks?: unknown[] } }) => JSON.stringify(edit.message.blocks).includes(ACTION.stopAfter);

describe('Stop after this node', () => {
  it('asks the running operation to stop once its step ends: recorded with who asked, the board repainted without the button', async () => {
    const op = await upgrading();
    const result = await lifecycle.stopAfterStep(click(op, stopAfterNonce(op)!));
    if (!result.ok) throw new Error(result.message);
    await result.followUp?.();

    const after = await stored(op.id);
    expect(after).toMatchObject({ state: 'running', cancelRequestedBy: 'U0ALICE' });
    expect(after.steps.map((s) => s.status)).toEqual(['running', 'pending']);
    expect(after.audit.at(-1)).toMatchObject({
      actor: 'U0ALICE',
      event: expect.stringMatching(/^stop requested by <@U0ALICE> after .*talos-prd-cp-1/),
    });
    expect(result.reply).toMatch(/finishes as it would, then `op-[a-z0-9]+` stops; no later step starts/);
    expect(rootEdits().at(-1)?.message.text).toContain(op.id);
    expect(hasStopButton(rootEdits().at(-1)!)).toBe(false);
    expect(JSON.stringify(rootEdits().at(-1)!.message.blocks)).toContain('⏹ Stopping after');
  });

  it('refuses a repeated click (already), a click from a board of an earlier step (stale) and one after the end (stale), changing nothing', async () => {
    const op = await upgrading();
    const nonce = stopAfterNonce(op)!;
    const first = await lifecycle.stopAfterStep(click(op, nonce));
    expect(first.ok).toBe(true);
    const again = await lifecycle.stopAfterStep(click(await stored(op.id), nonce, 'U0CAROL'));
    expect(again).toMatchObject({ ok: false, code: 'already' });

    const moved = await upgrading();
    const stale = await lifecycle.stopAfterStep(click(moved, 's0tabcdef'));
    expect(stale).toMatchObject({ ok: false, code: 'stale', message: expect.stringContaining('has moved on') });
    expect((await stored(moved.id)).cancelRequestedBy).toBeUndefined();

    const ended = await upgrading({ state: 'completed', endedAt: '2026-12-01T10:00:00.000Z' });
    const late = await lifecycle.stopAfterStep(click(ended, nonce));
    expect(late).toMatchObject({ ok: false, code: 'stale', message: expect.stringContaining('no longer valid') });
    expect(await stored(ended.id)).toMatchObject({ state: 'completed', revision: ended.revision });
    expect((await stored(moved.id)).audit).toEqual([]);
  });
});

describe('the live board', () => {
  it('records the phase on the operation, keeps its start while its text is the same, and repaints the root', async () => {
    const op = await upgrading();
    const board = liveBoard(f.deps, op.id, f.deps.logger, 20);
    board.phase('node-1', 'rebooting talos-prd-cp-1', 'talosctl: connection refused');
    await waitFor(async () => (await stored(op.id)).phase !== undefined);
    const first = (await stored(op.id)).phase!;
    f.clock.now = new Date(f.clock.now.getTime() + 60_000);
    board.phase('node-1', 'rebooting talos-prd-cp-1', 'Kubernetes: not Ready');
    await waitFor(async () => (await stored(op.id)).phase?.detail === 'Kubernetes: not Ready');
    expect((await stored(op.id)).phase).toEqual({ ...first, detail: 'Kubernetes: not Ready' });
    await waitFor(() => Promise.resolve(rootEdits().some((e) => JSON.stringify(e.message.blocks).includes('Kubernetes: not Ready'))));
    const edit = rootEdits().at(-1)!;
    expect(JSON.stringify(edit.message.blocks)).toMatch(/rebooting talos-prd-cp-1, 1 min/);
    expect(hasStopButton(edit)).toBe(true);
    await board.close();
  });

  it('coalesces a burst of phases into few edits, the last one showing the newest', async () => {
    const op = await upgrading();
    const board = liveBoard(f.deps, op.id, f.deps.logger, 1000);
    for (let i = 0; i <= 20; i++) board.phase('node-1', 'waiting for Longhorn', `${i * 5} %`);
    await waitFor(() => Promise.resolve(rootEdits().some((e) => JSON.stringify(e.message.blocks).includes('100 %'))));
    expect(rootEdits().length).toBeLessThanOrEqual(3);
    await board.close();
  });

  it('ignores a phase of a step that has ended, and a failed edit never reaches the step', async () => {
    const op = await upgrading({ steps: [node('node-1', 1, { status: 'done' }), node('node-2', 2)] });
    f.chat.failing.add('update');
    const board = liveBoard(f.deps, op.id, f.deps.logger, 10);
    expect(() => board.phase('node-1', 'draining talos-prd-cp-1')).not.toThrow();
    board.repaint();
    // The repaint is due at once and fails (Slack away): logged, and the board closes all the same.
    await systemClock.sleep(50);
    await board.close();
    expect((await stored(op.id)).phase).toBeUndefined();
    expect(rootEdits()).toEqual([]);
  });
});

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  const seen = await pollUntil(systemClock, { timeoutMs: 5000, intervalMs: 10 }, async () =>
    (await check()) ? { done: true, value: undefined } : { done: false, pending: 'not yet' },
  );
  if (!seen.ok) throw new Error('the board did not get there');
}
