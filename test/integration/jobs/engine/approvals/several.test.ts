import { beforeEach, describe, expect, it } from 'vitest';
import type { Lifecycle } from '../../../../../jobs/engine/lifecycle/lifecycle.ts';
import type { OperationClick } from '../../../../../jobs/engine/lifecycle/start.ts';
import { expireApproval } from '../../../../../jobs/engine/approvals/expire.ts';
import type { Approval, Operation } from '../../../../../src/ops/operation.ts';
import { engineFixture, inventory, type EngineFixture } from '../../../../support/engine-fixture.ts';
import { clusterYaml } from '../../../../support/inventory-yaml.ts';
import { useRedisFixture } from '../../../../support/redis-fixture.ts';

const redis = useRedisFixture();
const ROOT = '1700000000.000100';
const REQUEST_TS = '1700000000.000200';

/** Staging does not ask four eyes of its single approvals; its restore's resets need two approvers all the same. */
const STAGING = clusterYaml('staging');

let f: EngineFixture;
let lifecycle: Lifecycle;

beforeEach(() => {
  f = engineFixture(redis, { inventory: inventory(STAGING) });
  lifecycle = f.lifecycle();
});

const pending = (fields: Partial<Approval> = {}): Approval => ({
  step: 'reset',
  nonce: 'apprnonce1',
  messageTs: REQUEST_TS,
  requestedAt: '2026-12-01T09:50:00.000Z',
  expiresAt: '2026-12-01T10:20:00.000Z',
  state: 'pending',
  needed: 2,
  shown: [{ type: 'context', elements: [{ type: 'mrkdwn', text: 'Expires 10:20 UTC' }] }],
  ...fields,
});

/** An etcd restore rehearsal waiting at its resets, asked by U0ALICE and started by U0BOB. */
async function awaiting(fields: Partial<Operation> = {}): Promise<Operation> {
  const op = await f.operation({
    kind: 'etcd-restore',
    cluster: 'staging',
    channel: 'C0MAINTSTG',
    requestedBy: 'U0ALICE',
    startedBy: 'U0BOB',
    state: 'awaiting-approval',
    rootTs: ROOT,
    target: { talosVersion: 'v1.11.5' },
    steps: [
      { id: 'snapshot', kind: 'snapshot', status: 'done' },
      { id: 'reset', kind: 'reset', status: 'pending' },
    ],
    approvals: [pending()],
    data: { resets: {} },
    ...fields,
  });
  await f.deps.lock.acquire('staging', op.id);
  return op;
}

const stored = async (id: string): Promise<Operation> => (await f.deps.store.get(id))!;
const click = (op: Operation, user: string): OperationClick => ({ op, nonce: 'apprnonce1', user, messageTs: REQUEST_TS });
const runJobs = (): (string | undefined)[] => f.queue.added.filter((j) => j.name === 'operation-run').map((j) => j.opts.jobId);

describe('a step that needs two distinct approvers', () => {
  it('records the first approval as partial: the operation keeps waiting, the card says who approved, the others are paged', async () => {
    // Arrange
    const op = await awaiting();

    // Act
    const result = await lifecycle.decide(click(op, 'U0CAROL'), 'approved');

    // Assert
    expect(result).toMatchObject({ ok: true });
    const after = await stored(op.id);
    expect(after.state).toBe('awaiting-approval');
    expect(after.approvals[0]).toMatchObject({ state: 'pending', needed: 2, given: [{ by: 'U0CAROL' }] });
    expect(after.audit.map((e) => [e.actor, e.event])).toEqual([['U0CAROL', 'approved reset (1 of 2)']]);
    expect(runJobs()).toEqual([]);
    const edited = f.chat.edits.find((e) => e.ts === REQUEST_TS)!;
    expect(JSON.stringify(edited.message.blocks)).toContain('approval 1 of 2: <@U0CAROL> approved; waiting for a second approver');
    // Still clickable: the edited card keeps its buttons.
    expect(edited.message.blocks?.some((b) => b['type'] === 'actions')).toBe(true);
    const page = f.chat.posts.find((p) => p.threadTs === ROOT && p.message.text.includes('1 of 2'))!;
    expect(page.options).toMatchObject({ broadcast: true });
    // Paged: the approvers who may still approve, not the requester (an approver here), the starter or the first approver.
    expect(page.message.text).toContain('<@U0DAVE> <@U0ERIN>:');
    expect(page.message.text).not.toContain('<@U0ALICE>');
  });

  it('refuses the same approver twice, changing nothing', async () => {
    // Arrange
    const op = await awaiting({ approvals: [pending({ given: [{ by: 'U0CAROL', at: '2026-12-01T09:55:00.000Z' }] })] });

    // Act
    const result = await lifecycle.decide(click(op, 'U0CAROL'), 'approved');

    // Assert
    expect(result).toMatchObject({ ok: false, code: 'already' });
    expect(!result.ok && result.message).toContain('You already approved this step (1 of 2)');
    const after = await stored(op.id);
    expect(after.revision).toBe(op.revision);
    expect(after.approvals[0]!.given).toEqual([{ by: 'U0CAROL', at: '2026-12-01T09:55:00.000Z' }]);
  });

  it('refuses the requester and the starter, although the cluster does not require four eyes', async () => {
    // Arrange
    const op = await awaiting();

    // Act
    const byRequester = await lifecycle.decide(click(op, 'U0ALICE'), 'approved');
    const byStarter = await lifecycle.decide(click(op, 'U0BOB'), 'approved');

    // Assert
    expect(byRequester).toMatchObject({ ok: false, code: 'four-eyes' });
    expect(byStarter).toMatchObject({ ok: false, code: 'four-eyes' });
    expect((await stored(op.id)).revision).toBe(op.revision);
  });

  it('runs the step on a second, different approver seen by another replica: one write, one run queued', async () => {
    // Arrange: the first approval was given through another process; this lifecycle reads it from Redis.
    const op = await awaiting({ approvals: [pending({ given: [{ by: 'U0CAROL', at: '2026-12-01T09:55:00.000Z' }] })] });
    const replica = f.lifecycle();

    // Act
    const result = await replica.decide(click(op, 'U0DAVE'), 'approved');

    // Assert
    expect(result).toMatchObject({ ok: true });
    const after = await stored(op.id);
    expect(after.state).toBe('running');
    expect(after.approvals[0]).toMatchObject({ state: 'approved', by: 'U0DAVE', given: [{ by: 'U0CAROL' }, { by: 'U0DAVE' }] });
    expect(runJobs()).toEqual([`${op.id}-approved-apprnonce1`]);
    expect(JSON.stringify(f.chat.edits.find((e) => e.ts === REQUEST_TS)!.message)).toContain('Approved by <@U0CAROL> and <@U0DAVE>');
  });

  it('takes two clicks at the same moment, from a card both saw empty, as the two approvals', async () => {
    // Arrange
    const op = await awaiting();

    // Act
    const results = await Promise.all([
      lifecycle.decide(click(op, 'U0CAROL'), 'approved'),
      lifecycle.decide(click(op, 'U0DAVE'), 'approved'),
    ]);

    // Assert
    expect(results.map((r) => r.ok)).toEqual([true, true]);
    const after = await stored(op.id);
    expect(after.state).toBe('running');
    expect(after.approvals[0]!.given!.map((g) => g.by).sort()).toEqual(['U0CAROL', 'U0DAVE']);
    expect(runJobs()).toHaveLength(1);
  });

  it('expires a half-approved request as any other: the operation pauses, the next request starts from none', async () => {
    // Arrange
    const op = await awaiting({ approvals: [pending({ given: [{ by: 'U0CAROL', at: '2026-12-01T09:55:00.000Z' }] })] });
    f.clock.now = new Date('2026-12-01T10:21:00.000Z');

    // Act
    await expireApproval(f.deps, op.id, 'apprnonce1');
    const late = await lifecycle.decide(click(await stored(op.id), 'U0DAVE'), 'approved');

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('paused');
    expect(after.approvals[0]!.state).toBe('expired');
    expect(late.ok).toBe(false);
    expect(runJobs()).toEqual([]);
  });

  it('lets anyone who may stop stop a half-approved request: the operation is cancelled and the cluster freed', async () => {
    // Arrange
    const op = await awaiting({ approvals: [pending({ given: [{ by: 'U0CAROL', at: '2026-12-01T09:55:00.000Z' }] })] });

    // Act
    const result = await lifecycle.decide(click(op, 'U0BOB'), 'stopped');

    // Assert
    expect(result.ok).toBe(true);
    expect((await stored(op.id)).state).toBe('cancelled');
    expect(await f.deps.lock.holder('staging')).toBeUndefined();
  });
});
