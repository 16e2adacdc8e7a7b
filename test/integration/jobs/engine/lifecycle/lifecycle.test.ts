import { beforeEach, describe, expect, it } from 'vitest';
import { terraformData } from '../../../../../jobs/playbooks/terraform-apply/data.ts';
import type { Lifecycle } from '../../../../../jobs/engine/lifecycle/lifecycle.ts';
import type { OperationClick } from '../../../../../jobs/engine/lifecycle/start.ts';
import type { Approval, Operation, Step } from '../../../../../src/ops/operation.ts';
import { engineFixture, inventory, type EngineFixture } from '../../../../support/engine-fixture.ts';
import { useRedisFixture } from '../../../../support/redis-fixture.ts';

const redis = useRedisFixture();
/** Production's window, 22:00 to 02:00 UTC; the fixture's clock says 10:00. */
const CLOSED_WINDOW = "    maintenanceWindows: [{ start: '0 22 * * *', durationMinutes: 240, timeZone: 'UTC' }]\n";
const ROOT = '1700000000.000100';
const REQUEST_TS = '1700000000.000200';

let f: EngineFixture;
let lifecycle: Lifecycle;
let cancelled: Operation[];

function setUp(overrides = ''): void {
  f = engineFixture(redis, { inventory: inventory(overrides) });
  cancelled = [];
  lifecycle = f.lifecycle({ cancelled });
}

beforeEach(() => setUp());

const step = (id: string, fields: Partial<Step> = {}): Step => ({
  id,
  kind: 'upgrade-control-plane',
  node: '10.0.30.11',
  status: 'pending',
  ...fields,
});
const stored = async (id: string): Promise<Operation> => (await f.deps.store.get(id))!;
const holder = (): Promise<string | undefined> => f.deps.lock.holder('production');
const jobIds = (): (string | undefined)[] => f.queue.added.map((j) => j.opts.jobId);
const events = (op: Operation): string[] => op.audit.map((e) => e.event);
const click = (op: Operation, nonce: string, user: string, messageTs: string | undefined = ROOT): OperationClick => ({
  op,
  nonce,
  user,
  messageTs,
});

/** A Talos upgrade's plan, posted and waiting for its Start. */
function planned(fields: Partial<Operation> = {}): Promise<Operation> {
  return f.operation({
    kind: 'talos-upgrade',
    state: 'planned',
    planNonce: 'plannonce1',
    rootTs: ROOT,
    startedBy: undefined,
    target: { version: 'v1.12.1' },
    steps: [step('s1')],
    ...fields,
  });
}

/** A started operation that holds the cluster, in `state`. */
async function holding(fields: Partial<Operation>): Promise<Operation> {
  const op = await f.operation({ kind: 'talos-upgrade', rootTs: ROOT, target: { version: 'v1.12.1' }, steps: [step('s1')], ...fields });
  await f.deps.lock.acquire('production', op.id);
  return op;
}

const pending = (fields: Partial<Approval> = {}): Approval => ({
  step: 's1',
  nonce: 'apprnonce1',
  messageTs: REQUEST_TS,
  requestedAt: '2026-12-01T09:50:00.000Z',
  expiresAt: '2026-12-01T10:20:00.000Z',
  state: 'pending',
  ...fields,
});

describe('lifecycle.request', () => {
  it("stores a command's operation in preflight and queues its preflight", async () => {
    // Arrange
    const op = { ...(await planned()), id: 'op-request001', state: 'preflight' as const, planNonce: undefined };

    // Act
    await lifecycle.request(op);

    // Assert
    expect((await stored(op.id)).state).toBe('preflight');
    expect(f.queue.added.map((j) => [j.name, j.opts.jobId])).toEqual([['operation-preflight', 'op-request001-preflight']]);
  });

  it('stores a snapshot in preflight and queues its preflight, as every other kind', async () => {
    // Arrange
    const op = { ...(await planned()), id: 'op-request002', kind: 'snapshot' as const, state: 'preflight' as const, planNonce: undefined };

    // Act
    await lifecycle.request(op);

    // Assert
    expect((await stored(op.id)).state).toBe('preflight');
    expect(f.queue.added.map((j) => [j.name, j.opts.jobId])).toEqual([['operation-preflight', 'op-request002-preflight']]);
  });

  it('refuses a snapshot created running, as the previous version stored it, storing nothing', async () => {
    // Arrange
    const op = { ...(await planned()), id: 'op-request004', kind: 'snapshot' as const, state: 'running' as const, planNonce: undefined };

    // Act
    const outcome = lifecycle.request(op);

    // Assert
    await expect(outcome).rejects.toThrow('cannot be requested in state running');
    expect(await f.deps.store.get(op.id)).toBeUndefined();
  });

  it('refuses an operation in a state no request starts in, storing nothing', async () => {
    // Arrange
    const op = { ...(await planned()), id: 'op-request003' };

    // Act
    const outcome = lifecycle.request(op);

    // Assert
    await expect(outcome).rejects.toThrow('cannot be requested in state planned');
    expect(await f.deps.store.get(op.id)).toBeUndefined();
    expect(f.queue.added).toEqual([]);
  });
});

describe('lifecycle.start', () => {
  it('starts a plan: the lock, the running state with its held entry, the run queued, the root repainted', async () => {
    // Arrange
    const op = await planned();

    // Act
    const result = await lifecycle.start(click(op, 'plannonce1', 'U0BOB'));

    // Assert
    expect(result.ok).toBe(true);
    const after = await stored(op.id);
    expect(after).toMatchObject({ state: 'running', startedBy: 'U0BOB', startedAt: f.clock.now.toISOString() });
    expect(after.planNonce).toBeUndefined();
    expect(after.audit.map((e) => [e.actor, e.event, e.hold])).toEqual([['U0BOB', 'started', true]]);
    expect(after.audit[0]!.detail).toMatch(/^review confirmed: /);
    expect(await holder()).toBe(op.id);
    expect(jobIds()).toEqual([`${op.id}-start`]);
    expect(f.chat.edits.map((e) => e.ts)).toEqual([ROOT]);
  });

  it("records a Terraform change's Start as applied, by an approver", async () => {
    // Arrange
    const op = await planned({ kind: 'terraform-apply', target: {}, steps: [step('s1', { kind: 'tofu-apply', node: undefined })] });

    // Act
    const result = await lifecycle.start(click(op, 'plannonce1', 'U0CAROL'));

    // Assert
    expect(result.ok).toBe(true);
    const after = await stored(op.id);
    expect(after.audit.map((e) => [e.event, e.detail])).toEqual([['applied', undefined]]);
    // The Apply is the approval of the apply step: a failure or a Retry spends it like any step's.
    expect(after.approvals).toMatchObject([{ step: 's1', state: 'approved', by: 'U0CAROL', at: after.startedAt, messageTs: ROOT }]);
  });

  it("refuses (unconfirmed) a Terraform change's Apply without the ISO tick, or with a tick of another hash, and records the hash and who ticked once ticked", async () => {
    // Arrange: a plan that relies on the boot ISO, with the sha256 of the bot's download.
    const sha = 'a'.repeat(64);
    const iso = {
      because: 'it moves talos_version',
      url: 'https://factory.example/image/s/v1.12.1/nocloud-amd64.iso',
      file: 'isos:iso/talos-nocloud-amd64.iso',
      sha256: sha,
    };
    const op = await planned({
      kind: 'terraform-apply',
      target: {},
      steps: [step('s1', { kind: 'tofu-apply', node: undefined })],
      data: { terraform: { dirty: false, summary: '1 to change', iso } },
    });

    // Act
    const none = await lifecycle.start(click(op, 'plannonce1', 'U0CAROL'));
    const other = await lifecycle.start({ ...click(op, 'plannonce1', 'U0CAROL'), ticked: [`iso-sha256:${'b'.repeat(64)}`] });
    const before = await stored(op.id);
    const ticked = await lifecycle.start({ ...click(op, 'plannonce1', 'U0CAROL'), ticked: [`iso-sha256:${sha}`] });

    // Assert
    for (const refused of [none, other])
      expect(refused).toMatchObject({
        ok: false,
        code: 'unconfirmed',
        message: expect.stringContaining('Tick “the ISO at isos:iso/talos-nocloud-amd64.iso matches this sha256”'),
      });
    expect(before).toMatchObject({ state: 'planned', audit: [] });
    expect(ticked.ok).toBe(true);
    const after = await stored(op.id);
    const record = `the ISO at isos:iso/talos-nocloud-amd64.iso matches sha256 ${sha} (${iso.url})`;
    expect(after.confirmedReview).toEqual([record]);
    expect(after.audit.map((e) => [e.actor, e.event, e.detail])).toEqual([['U0CAROL', 'applied', `review confirmed: ${record}`]]);
  });

  it("records no approval with an operator's Start", async () => {
    // Arrange
    const op = await planned();

    // Act
    await lifecycle.start(click(op, 'plannonce1', 'U0BOB'));

    // Assert
    expect((await stored(op.id)).approvals).toEqual([]);
  });

  it.each([
    ['stale', 'a button of an older plan', { nonce: 'oldnonce1' }, {}, /this Start button is no longer valid/],
    [
      'four-eyes',
      'an Apply by the approver who asked for the change',
      { user: 'U0CAROL' },
      { kind: 'terraform-apply', requestedBy: 'U0CAROL' },
      /requires four eyes/,
    ],
    ['not-kept-copy', 'a copy of the plan Slack showed', { messageTs: '1700000000.000999' }, {}, /not the one the bot keeps up to date/],
    ['plan-expired', 'a plan older than its time', {}, { createdAt: '2026-12-01T08:00:00.000Z' }, /older than 60 minutes/],
    ['no-rehearsal', 'a production upgrade nobody rehearsed or overrode', {}, { rehearsal: {} }, /two approvers must click Override first/],
  ] as const)('refuses (%s) %s, leaving the plan and the cluster as they were', async (code, _what, clicked, fields, message) => {
    // Arrange
    const op = await planned(fields as Partial<Operation>);
    const c = { ...click(op, 'plannonce1', 'U0BOB'), ...clicked };

    // Act
    const result = await lifecycle.start(c);

    // Assert
    expect(result).toMatchObject({ ok: false, code, message: expect.stringMatching(message) });
    expect(await stored(op.id)).toMatchObject({ state: 'planned', audit: [] });
    expect(await holder()).toBeUndefined();
    expect(f.queue.added).toEqual([]);
  });

  it('refuses (window) a Start outside the maintenance window', async () => {
    // Arrange
    setUp(CLOSED_WINDOW);
    const op = await planned();

    // Act
    const result = await lifecycle.start(click(op, 'plannonce1', 'U0BOB'));

    // Assert
    expect(result).toMatchObject({ ok: false, code: 'window' });
    expect((await stored(op.id)).state).toBe('planned');
    expect(await holder()).toBeUndefined();
  });

  it('refuses (locked) a Start while another operation holds the cluster', async () => {
    // Arrange
    const other = await holding({ state: 'failed' });
    const op = await planned();

    // Act
    const result = await lifecycle.start(click(op, 'plannonce1', 'U0BOB'));

    // Assert
    expect(result).toMatchObject({ ok: false, code: 'locked', message: expect.stringContaining(other.id) });
    expect((await stored(op.id)).state).toBe('planned');
    expect(await holder()).toBe(other.id);
  });

  it('refuses (already) a second click on the same Start, keeping the lock with the started operation', async () => {
    // Arrange
    const op = await planned();
    await lifecycle.start(click(op, 'plannonce1', 'U0BOB'));

    // Act
    const again = await lifecycle.start(click(op, 'plannonce1', 'U0ALICE'));

    // Assert
    expect(again).toMatchObject({ ok: false, code: 'already' });
    expect(await stored(op.id)).toMatchObject({ state: 'running', startedBy: 'U0BOB' });
    expect(await holder()).toBe(op.id);
    expect(jobIds()).toEqual([`${op.id}-start`]);
  });
});

describe('lifecycle.decide', () => {
  const awaiting = (fields: Partial<Operation> = {}): Promise<Operation> =>
    holding({ state: 'awaiting-approval', approvals: [pending()], ...fields });

  it('lets the approver whose Apply started a Terraform change approve its apply again, and never its requester (four eyes)', async () => {
    // Arrange: production requires four eyes; U0ALICE asked for the change, U0CAROL applied it, a failure spent that.
    const fields = { kind: 'terraform-apply', requestedBy: 'U0ALICE', startedBy: 'U0CAROL' };
    const byRequester = await awaiting(fields);
    const byApplier = await awaiting(fields);

    // Act
    const refused = await lifecycle.decide(click(byRequester, 'apprnonce1', 'U0ALICE', REQUEST_TS), 'approved');
    const approved = await lifecycle.decide(click(byApplier, 'apprnonce1', 'U0CAROL', REQUEST_TS), 'approved');

    // Assert
    expect(refused).toMatchObject({ ok: false, code: 'four-eyes' });
    expect((await stored(byRequester.id)).approvals[0]!.state).toBe('pending');
    expect(approved.ok).toBe(true);
    expect((await stored(byApplier.id)).approvals[0]).toMatchObject({ state: 'approved', by: 'U0CAROL' });
  });

  it('approves: the step runs again with a held entry, the run is queued, the request shows the decision', async () => {
    // Arrange
    const op = await awaiting();

    // Act
    const result = await lifecycle.decide(click(op, 'apprnonce1', 'U0CAROL', REQUEST_TS), 'approved');

    // Assert
    expect(result.ok).toBe(true);
    const after = await stored(op.id);
    expect(after.state).toBe('running');
    expect(after.approvals[0]).toMatchObject({ state: 'approved', by: 'U0CAROL' });
    expect(after.audit.map((e) => [e.actor, e.event, e.hold])).toEqual([['U0CAROL', 'approved 10.0.30.11', true]]);
    expect(await holder()).toBe(op.id);
    expect(jobIds()).toEqual([`${op.id}-approved-apprnonce1`]);
    expect(f.chat.edits.map((e) => e.ts)).toEqual([REQUEST_TS]);
  });

  it('stops: the operation is cancelled, the cluster freed, its record queued, the request and the root edited', async () => {
    // Arrange
    const op = await awaiting();

    // Act
    const result = await lifecycle.decide(click(op, 'apprnonce1', 'U0BOB', REQUEST_TS), 'stopped');

    // Assert
    expect(result.ok).toBe(true);
    const after = await stored(op.id);
    expect(after).toMatchObject({ state: 'cancelled', cancelRequestedBy: 'U0BOB', reason: 'stopped by <@U0BOB> at the approval of s1' });
    expect(events(after)).toEqual(['stopped at 10.0.30.11']);
    expect(await holder()).toBeUndefined();
    expect(jobIds()).toEqual([`${op.id}-ended-cancelled`]);
    expect(f.chat.edits.map((e) => e.ts)).toEqual([REQUEST_TS, ROOT]);
  });

  it.each([
    ['stale', 'a button of no request the operation has', { nonce: 'othernonce' }, {}],
    ['four-eyes', 'an approval by the approver who started it', {}, { startedBy: 'U0CAROL' }],
    ['approval-expired', 'an approval after the request expired', {}, { approvals: [pending({ expiresAt: '2026-12-01T09:59:00.000Z' })] }],
    ['already', 'a second decision', {}, { state: 'running', approvals: [pending({ state: 'approved', by: 'U0DAVE' })] }],
  ] as const)('refuses (%s) %s, writing nothing', async (code, _what, clicked, fields) => {
    // Arrange
    const op = await awaiting(fields as Partial<Operation>);

    // Act
    const result = await lifecycle.decide({ ...click(op, 'apprnonce1', 'U0CAROL', REQUEST_TS), ...clicked }, 'approved');

    // Assert
    expect(result).toMatchObject({ ok: false, code });
    expect((await stored(op.id)).audit).toEqual([]);
    expect(await holder()).toBe(op.id);
    expect(f.queue.added).toEqual([]);
  });

  it('refuses (window) an approval outside the window, and takes a stop there', async () => {
    // Arrange
    setUp(CLOSED_WINDOW);
    const op = await awaiting();

    // Act
    const approved = await lifecycle.decide(click(op, 'apprnonce1', 'U0CAROL', REQUEST_TS), 'approved');
    const stopped = await lifecycle.decide(click(op, 'apprnonce1', 'U0CAROL', REQUEST_TS), 'stopped');

    // Assert
    expect(approved).toMatchObject({ ok: false, code: 'window', message: expect.stringContaining('Click again once the window is open') });
    expect(stopped.ok).toBe(true);
    expect((await stored(op.id)).state).toBe('cancelled');
  });
});

describe('lifecycle.rerequestApproval', () => {
  it('runs a paused operation again, so its run asks afresh; a second click is stale', async () => {
    // Arrange
    const op = await holding({ state: 'paused', approvals: [pending({ state: 'expired' })] });

    // Act
    const first = await lifecycle.rerequestApproval(click(op, 'apprnonce1', 'U0CAROL'));
    const second = await lifecycle.rerequestApproval(click(op, 'apprnonce1', 'U0DAVE'));

    // Assert
    expect(first.ok).toBe(true);
    expect(second).toMatchObject({ ok: false, code: 'stale' });
    const after = await stored(op.id);
    expect(after.state).toBe('running');
    expect(after.audit.map((e) => [e.actor, e.event])).toEqual([['U0CAROL', 'approval requested again']]);
    expect(jobIds()).toEqual([`${op.id}-resume-apprnonce1`]);
  });
});

describe('lifecycle.takeApprovals', () => {
  it("records who took an operation's approvals in one write with its entry; four eyes refuse the requester, a second take by the same approver changes nothing", async () => {
    // Arrange
    const op = await holding({ state: 'awaiting-approval', requestedBy: 'U0ALICE', startedBy: 'U0BOB', approvals: [pending()] });

    // Act
    const byRequester = await lifecycle.takeApprovals(click(op, 'apprnonce1', 'U0ALICE'));
    const byCarol = await lifecycle.takeApprovals(click(op, 'apprnonce1', 'U0CAROL'));
    const again = await lifecycle.takeApprovals(click(await stored(op.id), 'apprnonce1', 'U0CAROL'));
    const byDave = await lifecycle.takeApprovals(click(await stored(op.id), 'apprnonce1', 'U0DAVE'));
    const stale = await lifecycle.takeApprovals(click(op, 'othernonce', 'U0DAVE'));

    // Assert
    expect(byRequester).toMatchObject({ ok: false, code: 'four-eyes' });
    expect(byCarol.ok).toBe(true);
    expect(again).toMatchObject({ ok: false, code: 'already' });
    expect(byDave.ok).toBe(true);
    expect(stale).toMatchObject({ ok: false, code: 'stale' });
    const after = await stored(op.id);
    expect(after.state).toBe('awaiting-approval');
    expect(after.approvalsTaken?.by).toBe('U0DAVE');
    expect(after.audit.map((e) => [e.actor, e.event])).toEqual([
      ['U0CAROL', 'approvals taken by <@U0CAROL>'],
      ['U0DAVE', 'approvals taken by <@U0DAVE> from <@U0CAROL>'],
    ]);
  });
});

describe('lifecycle.retry', () => {
  const failed = (fields: Partial<Operation> = {}): Promise<Operation> =>
    holding({
      state: 'failed',
      endedAt: '2026-12-01T09:55:00.000Z',
      steps: [step('s1', { status: 'failed', startedAt: '2026-12-01T09:50:00.000Z', detail: 'timed out' })],
      approvals: [pending({ state: 'approved', by: 'U0CAROL' })],
      retry: { step: 's1', nonce: 'retrynonce1', state: 'offered' },
      ...fields,
    });

  it('runs the failed step again with its approval spent, queues the run and edits the stop and the root', async () => {
    // Arrange
    const op = await failed();

    // Act
    const result = await lifecycle.retry(click(op, 'retrynonce1', 'U0BOB', '1700000000.000300'));

    // Assert
    expect(result.ok).toBe(true);
    const after = await stored(op.id);
    expect(after).toMatchObject({ state: 'running', retry: { state: 'used' } });
    expect(after.endedAt).toBeUndefined();
    expect([after.steps[0]!.status, after.steps[0]!.detail]).toEqual(['pending', undefined]);
    expect(after.approvals[0]!.state).toBe('spent');
    expect(events(after)).toEqual(['retry requested from s1']);
    expect(await holder()).toBe(op.id);
    expect(jobIds()).toEqual([`${op.id}-retry-retrynonce1`]);
    expect(f.chat.edits.map((e) => e.ts)).toEqual(['1700000000.000300', ROOT]);
  });

  it('refuses (stale) a Retry that is not the one offered', async () => {
    // Arrange
    const op = await failed();

    // Act
    const result = await lifecycle.retry(click(op, 'oldnonce1', 'U0BOB'));

    // Assert
    expect(result).toMatchObject({ ok: false, code: 'stale', message: expect.stringContaining('this Retry button is no longer valid') });
    expect((await stored(op.id)).state).toBe('failed');
    expect(f.queue.added).toEqual([]);
  });

  it('refuses (window) a Retry outside the window', async () => {
    // Arrange
    setUp(CLOSED_WINDOW);
    const op = await failed();

    // Act
    const result = await lifecycle.retry(click(op, 'retrynonce1', 'U0BOB'));

    // Assert
    expect(result).toMatchObject({ ok: false, code: 'window' });
    expect((await stored(op.id)).state).toBe('failed');
  });
});

describe('lifecycle.overrideWindow', () => {
  const waiting = (): Promise<Operation> =>
    holding({ state: 'waiting-window', windowWait: { step: 's1', nonce: 'winnonce1', since: '2026-12-01T09:00:00.000Z' } });

  it("records a first approver's word and starts the waiting step only on a second, distinct approver's, which the step keeps", async () => {
    // Arrange
    const op = await waiting();

    // Act
    const first = await lifecycle.overrideWindow(click(op, 'winnonce1', 'U0CAROL', '1700000000.000400'));
    const asked = await stored(op.id);
    const same = await lifecycle.overrideWindow(click(asked, 'winnonce1', 'U0CAROL', '1700000000.000400'));
    const second = await lifecycle.overrideWindow(click(asked, 'winnonce1', 'U0DAVE', '1700000000.000400'));

    // Assert
    expect(first).toMatchObject({ ok: true, reply: expect.stringContaining('once a second approver clicks') });
    expect(asked).toMatchObject({ state: 'waiting-window', windowWait: { firstOverride: { by: 'U0CAROL' } } });
    expect(same).toMatchObject({ ok: false, code: 'second-approver' });
    expect(second.ok).toBe(true);
    const after = await stored(op.id);
    expect(after.state).toBe('running');
    expect(after.windowWait).toBeUndefined();
    const at = f.clock.now.toISOString();
    expect(after.steps[0]!.windowOverride).toEqual({ by: 'U0CAROL', at, secondBy: 'U0DAVE', secondAt: at });
    expect(after.audit.map((e) => [e.actor, e.event, e.detail])).toEqual([
      ['U0CAROL', 'start outside the maintenance window asked; a second approver must confirm', '10.0.30.11'],
      ['U0DAVE', 'maintenance window overridden', '10.0.30.11; asked by <@U0CAROL>, confirmed by <@U0DAVE>'],
    ]);
    expect(jobIds()).toEqual([`${op.id}-window-override-winnonce1`]);
    expect(f.chat.edits.map((e) => e.ts)).toEqual(['1700000000.000400']);
  });

  it('refuses (four-eyes) the operator who started it, and (stale) a click once the step started', async () => {
    // Arrange
    const op = await waiting();

    // Act
    const own = await lifecycle.overrideWindow(click(op, 'winnonce1', 'U0ALICE'));
    await lifecycle.overrideWindow(click(op, 'winnonce1', 'U0CAROL'));
    await lifecycle.overrideWindow(click(await stored(op.id), 'winnonce1', 'U0DAVE'));
    const again = await lifecycle.overrideWindow(click(await stored(op.id), 'winnonce1', 'U0CAROL'));

    // Assert
    expect(own).toMatchObject({ ok: false, code: 'four-eyes' });
    expect(again).toMatchObject({ ok: false, code: 'stale' });
    expect((await stored(op.id)).steps[0]!.windowOverride).toMatchObject({ by: 'U0CAROL', secondBy: 'U0DAVE' });
  });
});

describe('lifecycle.overrideRehearsal', () => {
  it('unlocks the Start of an unrehearsed plan once two approvers overrode, never the requester, each approver once', async () => {
    // Arrange
    const op = await planned({ rehearsal: {} });

    // Act
    const own = await lifecycle.overrideRehearsal(click(op, 'plannonce1', 'U0ALICE'));
    const first = await lifecycle.overrideRehearsal(click(op, 'plannonce1', 'U0CAROL'));
    const half = await stored(op.id);
    const startHalf = await lifecycle.start(click(half, 'plannonce1', 'U0BOB'));
    const same = await lifecycle.overrideRehearsal(click(half, 'plannonce1', 'U0CAROL'));
    const second = await lifecycle.overrideRehearsal(click(half, 'plannonce1', 'U0DAVE'));
    const third = await lifecycle.overrideRehearsal(click(half, 'plannonce1', 'U0ERIN'));

    // Assert
    expect(own).toMatchObject({ ok: false, code: 'four-eyes' });
    expect(first.ok).toBe(true);
    expect(startHalf).toMatchObject({
      ok: false,
      code: 'no-rehearsal',
      message: expect.stringContaining('a second approver must click Override too'),
    });
    expect(same).toMatchObject({ ok: false, code: 'four-eyes', message: expect.stringContaining('a second approver must override too') });
    expect(second.ok).toBe(true);
    expect(third).toMatchObject({
      ok: false,
      code: 'stale',
      message: expect.stringContaining('already overridden by <@U0CAROL> and <@U0DAVE>'),
    });
    const after = await stored(op.id);
    expect(after).toMatchObject({ state: 'planned', override: { by: 'U0CAROL', second: { by: 'U0DAVE' } } });
    expect(after.audit.map((e) => [e.event, e.actor, e.hold])).toEqual([
      ['override: no staging rehearsal', 'U0CAROL', true],
      ['override: no staging rehearsal', 'U0DAVE', true],
    ]);
    expect((await lifecycle.start(click(after, 'plannonce1', 'U0BOB'))).ok).toBe(true);
  });
});

describe('lifecycle.requestRollback', () => {
  it('requests a rollback operation of the failed node, with its preflight queued; a second click is refused', async () => {
    // Arrange
    const op = await holding({ state: 'failed', failure: { step: 's1', node: '10.0.30.11', nonce: 'rbnonce1', rollback: 'offered' } });

    // Act
    const result = await lifecycle.requestRollback(click(op, 'rbnonce1', 'U0ALICE'));
    const again = await lifecycle.requestRollback(click(op, 'rbnonce1', 'U0BOB'));

    // Assert
    const after = await stored(op.id);
    const child = after.failure!.rollbackOp!;
    expect(result).toMatchObject({ ok: true, reply: expect.stringContaining(`as \`${child}\``) });
    expect(again).toMatchObject({ ok: false, code: 'already', message: expect.stringContaining(child) });
    expect(after).toMatchObject({ state: 'failed', failure: { rollback: 'requested' } });
    expect(events(after)).toEqual(['rollback of 10.0.30.11 requested']);
    expect(await stored(child)).toMatchObject({
      kind: 'node-rollback',
      state: 'preflight',
      requestedBy: 'U0ALICE',
      target: { node: '10.0.30.11' },
      data: { parent: { op: op.id, step: 's1' } },
    });
    expect(await holder()).toBe(op.id);
    expect(jobIds()).toEqual([`${child}-preflight`]);
  });
});

describe('lifecycle.planAgain', () => {
  it('plans a refused Terraform change again as a new operation, then repaints the old plan; once', async () => {
    // Arrange
    const op = await f.operation({ kind: 'terraform-apply', state: 'refused', rootTs: ROOT, endedAt: '2026-12-01T09:00:00.000Z' });

    // Act
    const result = await lifecycle.planAgain(click(op, 'replan', 'U0BOB'));
    const editsBeforeFollowUp = f.chat.edits.length;
    if (result.ok) await result.followUp?.();
    const again = await lifecycle.planAgain(click(op, 'replan', 'U0ALICE'));

    // Assert
    const after = await stored(op.id);
    const child = terraformData(after).replannedAs!;
    expect(result).toMatchObject({ ok: true, reply: expect.stringContaining(`Planning again as \`${child}\``) });
    expect(again).toMatchObject({ ok: false, code: 'already' });
    expect(after.state).toBe('refused');
    expect(events(after)).toEqual(['planned again']);
    expect(await stored(child)).toMatchObject({ kind: 'terraform-apply', state: 'preflight', requestedBy: 'U0BOB' });
    expect(jobIds()).toEqual([`${child}-preflight`]);
    expect([editsBeforeFollowUp, f.chat.edits.map((e) => e.ts)]).toEqual([0, [ROOT]]);
  });

  it('refuses (stale) planning again an operation that has not ended', async () => {
    // Arrange
    const op = await holding({ kind: 'terraform-apply', state: 'running' });

    // Act
    const result = await lifecycle.planAgain(click(op, 'replan', 'U0BOB'));

    // Assert
    expect(result).toMatchObject({ ok: false, code: 'stale', message: expect.stringContaining('plan again once it has ended') });
    expect(f.queue.added).toEqual([]);
  });
});

describe('lifecycle.cancel', () => {
  it('ends a stopped operation at once, frees the cluster and hands the messages on', async () => {
    // Arrange
    const op = await holding({ state: 'failed' });

    // Act
    const result = await lifecycle.cancel(op.id, 'U0BOB');

    // Assert
    expect(result).toMatchObject({ ok: true, reply: expect.stringContaining('*production* is free for the next operation') });
    expect(await stored(op.id)).toMatchObject({
      state: 'cancelled',
      cancelRequestedBy: 'U0BOB',
      reason: 'cancelled by <@U0BOB> after the failure was handled',
    });
    expect(await holder()).toBeUndefined();
    expect(cancelled.map((o) => o.id)).toEqual([op.id]);
  });

  it('asks a running operation to stop between steps, keeping its lock; a second ask is already', async () => {
    // Arrange
    const op = await holding({ state: 'running' });

    // Act
    const first = await lifecycle.cancel(op.id, 'U0BOB');
    const second = await lifecycle.cancel(op.id, 'U0ALICE');

    // Assert
    expect(first).toMatchObject({ ok: true, reply: expect.stringContaining('will stop after its current step') });
    expect(second).toMatchObject({ ok: false, code: 'already' });
    expect(await stored(op.id)).toMatchObject({ state: 'running', cancelRequestedBy: 'U0BOB' });
    expect(await holder()).toBe(op.id);
    expect(cancelled).toEqual([]);
  });

  it('refuses (not-cancellable) a rollback whose node is rebooting, and (stale) an operation that has ended', async () => {
    // Arrange
    const rollback = await holding({
      kind: 'node-rollback',
      state: 'running',
      steps: [
        step('r1', { kind: 'rollback-node', status: 'running', issuedAt: '2026-12-01T09:58:00Z' }),
        step('r2', { kind: 'rollback-verify' }),
      ],
    });
    const done = await f.operation({ state: 'completed', endedAt: '2026-12-01T09:00:00.000Z' });

    // Act
    const rebooting = await lifecycle.cancel(rollback.id, 'U0BOB');
    const ended = await lifecycle.cancel(done.id, 'U0BOB');

    // Assert
    expect(rebooting).toMatchObject({ ok: false, code: 'not-cancellable' });
    expect(ended).toMatchObject({ ok: false, code: 'stale', message: expect.stringContaining('has already ended (completed)') });
    const kept = await stored(rollback.id);
    expect([kept.state, kept.cancelRequestedBy]).toEqual(['running', undefined]);
    expect(await holder()).toBe(rollback.id);
  });

  it("refuses (stale) a plan's Cancel from an older plan, and cancels with the current one", async () => {
    // Arrange
    const op = await planned();

    // Act
    const old = await lifecycle.cancelPlan(click(op, 'oldnonce1', 'U0BOB'));
    const current = await lifecycle.cancelPlan(click(op, 'plannonce1', 'U0BOB'));

    // Assert
    expect(old).toMatchObject({ ok: false, code: 'stale', message: expect.stringContaining(`Use \`/talos cancel ${op.id}\``) });
    expect(current.ok).toBe(true);
    expect((await stored(op.id)).state).toBe('cancelled');
  });
});
