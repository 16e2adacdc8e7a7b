import { beforeEach, describe, expect, it } from 'vitest';
import { aTestPlaybook } from '../../../support/test-playbook.ts';
import type { Job } from 'bullmq';
import { createApprovalReminderJob } from '../../../../jobs/engine/approval-reminder.ts';
import { StepFailure } from '../../../../jobs/engine/job-context.ts';
import type { Playbook, WalkStart } from '../../../../jobs/engine/playbook.ts';
import { createPreflightJob } from '../../../../jobs/engine/preflight.ts';
import { createEndedJob } from '../../../../jobs/engine/ended.ts';
import { createPlanExpiryJob } from '../../../../jobs/engine/plan-expiry.ts';
import { walkOperation } from '../../../../jobs/engine/walk.ts';
import { rollbackCancelRefusal } from '../../../../jobs/playbooks/node-rollback/texts.ts';
import type { ClusterSession } from '../../../../src/cluster/cluster-session.ts';
import type { Operation, Step } from '../../../../src/ops/operation.ts';
import { retried } from '../../../../src/ops/transitions.ts';
import type { Talosctl } from '../../../../src/talos/talosctl.ts';
import { engineFixture, inventory, type EngineFixture } from '../../../support/engine-fixture.ts';
import { useRedisFixture } from '../../../support/redis-fixture.ts';

const redis = useRedisFixture();
let f: EngineFixture;

beforeEach(async () => {
  f = engineFixture(redis);
});

const step = (id: string, fields: Partial<Step> = {}): Step => ({ id, kind: 'k8s-apply', status: 'pending', ...fields });

/** A playbook whose steps only record that they ran; `gated` needs an approval. */
function playbook(ran: string[], overrides: Partial<Playbook> = {}): Playbook {
  return aTestPlaybook({
    preflight: () => Promise.resolve({ refusals: [], notes: [], steps: [step('first'), step('gated')], target: {} }),
    needsApproval: (s) => s.id === 'gated',
    approvalMessage: (_ctx, op, _approval, s) => Promise.resolve({ text: `Approve ${s.id}? (${op.id})` }),
    runStep: (_ctx, _op, s) => {
      ran.push(s.id);
      return Promise.resolve({ event: `ran ${s.id}`, detail: 'ok' });
    },
    ...overrides,
  });
}

function context(signal?: AbortSignal): WalkStart {
  const cluster = f.deps.inventory.clusters[0]!;
  return { deps: f.deps, cluster, session: {} as ClusterSession, talosctl: {} as Talosctl, log: f.deps.logger, signal };
}

/** A running operation with its root in Slack and the cluster locked to it, as Start leaves it. */
async function started(fields: Partial<Operation>): Promise<Operation> {
  const op = await f.operation({ rootTs: '1700000000.000001', ...fields });
  await f.deps.lock.acquire(op.cluster, op.id);
  return op;
}

const stored = async (id: string): Promise<Operation> => (await f.deps.store.get(id))!;

const ranEnded = new Set<unknown>();

/** Runs the jobs queued when `opId` ended and not run yet, as the worker would. */
async function runEnded(opId: string, book: Playbook): Promise<void> {
  for (const job of f.queue.added.filter(
    (j) => j.name === 'operation-ended' && (j.data as { opId: string }).opId === opId && !ranEnded.has(j),
  )) {
    ranEnded.add(job);
    await createEndedJob(f.deps, { 'k8s-upgrade': book })({ data: job.data } as Job);
  }
}

describe('the operation engine walks a playbook', () => {
  it('finishes a step whose root-message edit failed, and completes the operation', async () => {
    // Arrange
    const ran: string[] = [];
    const op = await started({ steps: [step('first')] });
    f.chat.failing.add('update');

    // Act
    await walkOperation(context(), op.id, playbook(ran));

    // Assert
    const after = await stored(op.id);
    expect(ran).toEqual(['first']);
    expect(after.state).toBe('completed');
    expect(after.steps.map((s) => s.status)).toEqual(['done']);
    expect(await f.deps.lock.holder('production')).toBeUndefined();
  });

  it('completes an operation whose maintenance record could not be attached', async () => {
    // Arrange
    const op = await started({ steps: [step('first')] });
    f.chat.failing.add('upload');

    // Act
    await walkOperation(context(), op.id, playbook([]));
    await runEnded(op.id, playbook([]));

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('completed');
    expect(after.validation).toBe('all steps ran');
    expect(f.chat.uploads).toEqual([]);
    expect(after.audit.map((e) => e.event)).toContain('completed');
  });

  it('never records a cancelled run as a failure: a run that lost its lease leaves the step to the run that holds it', async () => {
    // Arrange
    const lost = new AbortController();
    const op = await started({ steps: [step('first')] });
    const cancelledMidStep = playbook([], {
      runStep: () => {
        lost.abort(new Error('the run lease was taken by another run'));
        // What a talosctl child killed by the signal turns into inside a step.
        return Promise.reject(new StepFailure('talosctl upgrade-k8s failed: exec-cancelled'));
      },
    });

    // Act
    const walking = walkOperation(context(lost.signal), op.id, cancelledMidStep);

    // Assert
    await expect(walking).rejects.toThrow('exec-cancelled');
    const after = await stored(op.id);
    expect(after.state).toBe('running');
    expect(after.steps[0]!.status).toBe('running');
    expect(after.audit.map((e) => e.event)).not.toContain('stopped');
    expect(await f.deps.lock.holder('production')).toBe(op.id);
  });

  it('spends the approval of a step that failed, and a Retry of it asks an approver again', async () => {
    // Arrange
    const ran: string[] = [];
    const op = await started({
      state: 'running',
      steps: [step('first', { status: 'done' }), step('gated')],
      approvals: [
        {
          step: 'gated',
          nonce: 'n1',
          messageTs: '1700000000.000009',
          requestedAt: '2026-12-01T09:59:00Z',
          expiresAt: '2026-12-01T10:29:00Z',
          state: 'approved',
          by: 'U0CAROL',
          at: '2026-12-01T09:59:30Z',
        },
      ],
    });
    const failing = playbook(ran, { runStep: () => Promise.reject(new StepFailure('upgrade-k8s failed')) });

    // Act
    await walkOperation(context(), op.id, failing);
    const failed = await stored(op.id);
    const { op: retrying } = await f.deps.store.update(op.id, (o) => retried(o, failed.retry!.nonce));
    await walkOperation(context(), op.id, playbook(ran));

    // Assert
    expect(failed.state).toBe('failed');
    expect(failed.approvals[0]!.state).toBe('spent');
    expect(retrying.state).toBe('running');
    const after = await stored(op.id);
    expect(ran).toEqual([]);
    expect(after.state).toBe('awaiting-approval');
    expect(after.approvals.map((a) => a.state)).toEqual(['spent', 'pending']);
    expect(f.chat.thread(op.rootTs!).some((t) => t.includes('Approve gated?'))).toBe(true);
  });

  it('stops before a step whose approval request could not be made, leaving the step unstarted and offering a Retry of it', async () => {
    // Arrange: the request's evidence (etcd state) cannot be read.
    const ran: string[] = [];
    const op = await started({ steps: [step('first', { status: 'done' }), step('gated')] });
    const unreadable = playbook(ran, { approvalMessage: () => Promise.reject(new Error('talosctl etcd status timed out after 3s')) });

    // Act
    await expect(walkOperation(context(), op.id, unreadable)).rejects.toThrow('timed out');
    const { createRunJob } = await import('../../../../jobs/engine/walk.ts');
    await createRunJob(f.deps, { 'k8s-upgrade': unreadable })({ id: 'job-1', data: { opId: op.id } } as unknown as Job);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('failed');
    expect(after.steps.map((s) => [s.id, s.status, s.startedAt])).toEqual([
      ['first', 'done', undefined],
      ['gated', 'pending', undefined],
    ]);
    expect(after.retry).toMatchObject({ step: 'gated', state: 'offered' });
    expect(after.failure).toBeUndefined();
    expect(after.audit.filter((e) => e.event.startsWith('step started'))).toEqual([]);
    expect(f.chat.thread(op.rootTs!).some((t) => t.includes('before') && t.includes('which did not start'))).toBe(true);
    expect(ran).toEqual([]);
  });

  it('holds a step outside the maintenance window, queues a run for the opening, and runs it inside', async () => {
    // Arrange: a window every day 22:00-02:00 UTC; it is 10:00.
    f = engineFixture(redis, {
      inventory: inventory("    maintenanceWindows: [{ start: '0 22 * * *', durationMinutes: 240, timeZone: 'UTC' }]\n"),
    });
    const ran: string[] = [];
    const op = await started({ steps: [step('first')] });

    // Act
    await walkOperation(context(), op.id, playbook(ran));
    const waiting = await stored(op.id);
    f.clock.now = new Date('2026-12-01T22:00:05Z');
    await walkOperation(context(), op.id, playbook(ran));

    // Assert
    expect(waiting.state).toBe('waiting-window');
    expect(waiting.windowWait).toMatchObject({ step: 'first', opensAt: '2026-12-01T22:00:00.000Z' });
    const queued = f.queue.added.find((j) => j.name === 'operation-run');
    expect(queued?.opts.delay).toBe(12 * 3600_000 + 1000);
    expect(f.chat.thread(op.rootTs!).some((t) => t.includes('Waiting for the maintenance window'))).toBe(true);
    expect(ran).toEqual(['first']);
    expect((await stored(op.id)).state).toBe('completed');
  });

  it('asks again for an approval left waiting through a closed window: too old when its step could start, it is spent, not used', async () => {
    // Arrange: a window every day 22:00-02:00 UTC; the step was approved at 01:50, inside the last one, and it is 10:00 now.
    f = engineFixture(redis, {
      inventory: inventory("    maintenanceWindows: [{ start: '0 22 * * *', durationMinutes: 240, timeZone: 'UTC' }]\n"),
    });
    const ran: string[] = [];
    const approval = {
      step: 'gated',
      nonce: 'n1',
      messageTs: '1700000000.000009',
      requestedAt: '2026-12-01T01:45:00Z',
      expiresAt: '2026-12-01T02:15:00Z',
      state: 'approved' as const,
      by: 'U0CAROL',
      at: '2026-12-01T01:50:00Z',
    };
    const op = await started({ steps: [step('first', { status: 'done' }), step('gated')], approvals: [approval] });

    // Act: the step waits for the window; the window opens 20 hours after the approval.
    await walkOperation(context(), op.id, playbook(ran));
    const waiting = await stored(op.id);
    f.clock.now = new Date('2026-12-01T22:00:05Z');
    await walkOperation(context(), op.id, playbook(ran));

    // Assert
    expect(waiting.state).toBe('waiting-window');
    expect(ran).toEqual([]);
    const after = await stored(op.id);
    expect(after.state).toBe('awaiting-approval');
    expect(after.approvals.map((a) => [a.step, a.state])).toEqual([
      ['gated', 'spent'],
      ['gated', 'pending'],
    ]);
    expect(after.audit.find((e) => e.event === 'approval too old: gated')?.detail).toContain('more than 30 min');
    expect(f.chat.thread(op.rootTs!).some((t) => t.includes('Approve gated?'))).toBe(true);
  });

  it('runs a step on an approval younger than APPROVAL_MAX_AGE_MINUTES, and resumes a step already started on an older one', async () => {
    // Arrange: the bound is 10 minutes; one approval is 9 minutes old, the other 2 hours, its step already running.
    f = engineFixture(redis);
    f.deps.timeouts.approvalMaxAgeMs = 10 * 60_000;
    const ran: string[] = [];
    const approval = (at: string) => ({
      step: 'gated',
      nonce: `n-${at}`,
      messageTs: '1700000000.000009',
      requestedAt: at,
      expiresAt: '2026-12-01T10:30:00Z',
      state: 'approved' as const,
      by: 'U0CAROL',
      at,
    });
    const fresh = await started({
      steps: [step('first', { status: 'done' }), step('gated')],
      approvals: [approval('2026-12-01T09:51:00Z')],
    });
    const resumed = await f.operation({
      rootTs: '1700000000.000002',
      steps: [step('first', { status: 'done' }), step('gated', { status: 'running', startedAt: '2026-12-01T08:01:00Z' })],
      approvals: [approval('2026-12-01T08:00:00Z')],
    });

    // Act: one after the other, each holding the cluster while it walks
    await walkOperation(context(), fresh.id, playbook(ran));
    await f.deps.lock.acquire(resumed.cluster, resumed.id);
    await walkOperation(context(), resumed.id, playbook(ran));

    // Assert
    expect(ran).toEqual(['gated', 'gated']);
    expect((await stored(fresh.id)).state).toBe('completed');
    expect((await stored(resumed.id)).approvals.map((a) => a.state)).toEqual(['approved']);
  });

  it("runs a step outside the window once an approver's override is on it", async () => {
    // Arrange
    f = engineFixture(redis, {
      inventory: inventory("    maintenanceWindows: [{ start: '0 22 * * *', durationMinutes: 240, timeZone: 'UTC' }]\n"),
    });
    const ran: string[] = [];
    const op = await started({ steps: [step('first', { windowOverride: { by: 'U0CAROL', at: '2026-12-01T09:00:00Z' } })] });

    // Act
    await walkOperation(context(), op.id, playbook(ran));

    // Assert
    expect(ran).toEqual(['first']);
    expect((await stored(op.id)).state).toBe('completed');
  });

  it('keeps a rollback that rebooted its node running through a cancel asked for before', async () => {
    // Arrange
    const ran: string[] = [];
    const op = await started({
      kind: 'node-rollback',
      cancelRequestedBy: 'U0BOB',
      steps: [
        step('rollback', { kind: 'rollback-node', node: '10.0.30.11', status: 'done', issuedAt: '2026-12-01T09:58:00Z' }),
        step('verify', { kind: 'rollback-verify', node: '10.0.30.11' }),
      ],
    });

    // Act
    const refused = await f.lifecycle().cancel(op.id, 'U0ALICE');
    // The rollback's own refusal, as its playbook declares it.
    await walkOperation(context(), op.id, playbook(ran, { needsApproval: () => false, cancelRefusal: rollbackCancelRefusal }));

    // Assert
    expect(refused).toMatchObject({ ok: false, code: 'not-cancellable', message: expect.stringContaining('cannot be cancelled now') });
    expect(ran).toEqual(['verify']);
    expect((await stored(op.id)).state).toBe('completed');
  });
});

describe('the preflight of every operation', () => {
  const job = (opId: string): Job => ({ data: { opId } }) as unknown as Job;

  it('leaves an operation cancelled during its preflight cancelled, with the lock given back and no run queued', async () => {
    // Arrange
    const op = await f.operation({ kind: 'node-remove', state: 'preflight', target: { node: '10.0.30.13' } });
    const cancelledMeanwhile = playbook([], {
      start: 'run',
      async preflight() {
        await f.lifecycle().cancel(op.id, 'U0BOB');
        return { refusals: [], notes: [], steps: [step('first')], target: {} };
      },
    });

    // Act
    await createPreflightJob(f.deps, { 'node-remove': cancelledMeanwhile })(job(op.id));

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('cancelled');
    expect(after.steps).toEqual([]);
    expect(await f.deps.lock.holder('production')).toBeUndefined();
    expect(f.queue.added.filter((j) => j.name === 'operation-run')).toEqual([]);
  });

  it('posts the plan again, and queues the run, when Slack failed after the state was written', async () => {
    // Arrange
    const op = await f.operation({ kind: 'node-remove', state: 'preflight', target: { node: '10.0.30.13' } });
    const pb = playbook([], { start: 'run' });
    f.chat.failing.add('post');

    // Act
    const first = createPreflightJob(f.deps, { 'node-remove': pb })(job(op.id));
    await expect(first).rejects.toThrow('internal_error');
    const between = await stored(op.id);
    f.chat.failing.delete('post');
    await createPreflightJob(f.deps, { 'node-remove': pb })(job(op.id));

    // Assert
    expect(between.state).toBe('running');
    expect(between.rootTs).toBeUndefined();
    const after = await stored(op.id);
    expect(after.rootTs).toBe(f.chat.posts[0]!.ts);
    expect(f.queue.added.filter((j) => j.name === 'operation-run').map((j) => j.opts.jobId)).toEqual([`${op.id}-run`]);
    expect(await f.deps.lock.holder('production')).toBe(op.id);
  });
});

describe('the engine pages the people who must act', () => {
  /** A request as a playbook makes it: the question first, evidence under it, the buttons last. */
  const gatedPlaybook = (ran: string[] = []) =>
    playbook(ran, {
      approvalMessage: (_ctx, op, _approval, s) =>
        Promise.resolve({
          text: `Approve ${s.id}? (${op.id})`,
          blocks: [
            { type: 'section', text: { type: 'mrkdwn', text: `*Approve ${s.id}?*` } },
            { type: 'section', text: { type: 'mrkdwn', text: '*etcd now:* 3 members, one leader' } },
            { type: 'actions', block_id: 'approve', elements: [] },
          ],
        }),
    });
  const nonceJob = (opId: string, nonce: string) => ({ data: { opId, nonce } }) as Job;
  const remindersIn = (rootTs: string) => f.chat.posts.filter((p) => p.threadTs === rootTs && p.message.text.includes('⏰'));

  it('broadcasts the approval request with its question first and the approvers mentioned, keeps what it showed, and queues a reminder', async () => {
    // Arrange
    const op = await started({ steps: [step('first', { status: 'done' }), step('gated')] });

    // Act
    await walkOperation(context(), op.id, gatedPlaybook());

    // Assert
    const after = await stored(op.id);
    const approval = after.approvals[0]!;
    const request = f.chat.posts.find((p) => p.ts === approval.messageTs)!;
    expect(request.options).toEqual({ once: true, broadcast: true });
    // The notification leads with the request's own words, its entry's number after them; the approvers are mentioned once, on the card.
    expect(request.message.text.split('\n')).toEqual([`Approve gated? (${op.id})`, `#${approval.seq} approval requested: gated`]);
    expect(request.message.blocks!.slice(0, 2)).toEqual([
      { type: 'section', text: { type: 'mrkdwn', text: '*Approve gated?*' } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: 'For <@U0CAROL> <@U0DAVE>' }] },
    ]);
    expect(approval.shown).toEqual([{ type: 'section', text: { type: 'mrkdwn', text: '*etcd now:* 3 members, one leader' } }]);
    const reminder = f.queue.added.find((j) => j.name === 'approval-reminder');
    expect(reminder).toEqual({
      name: 'approval-reminder',
      data: { opId: op.id, nonce: approval.nonce },
      opts: expect.objectContaining({ jobId: `${op.id}-remind-${approval.nonce}`, delay: 20 * 60_000 }),
    });
  });

  it('pages only the approvers four eyes lets approve: not the one who started the operation', async () => {
    // Arrange
    const op = await started({ startedBy: 'U0CAROL', steps: [step('gated')] });

    // Act
    await walkOperation(context(), op.id, gatedPlaybook());

    // Assert
    const { messageTs } = (await stored(op.id)).approvals[0]!;
    const request = f.chat.posts.find((p) => p.ts === messageTs)!;
    expect(JSON.stringify(request.message.blocks)).toContain('For <@U0DAVE>');
    expect(JSON.stringify(request.message)).not.toContain('<@U0CAROL>');
  });

  it('reminds the approvers once, broadcast, while the request is unanswered', async () => {
    // Arrange
    const op = await started({ steps: [step('gated')] });
    await walkOperation(context(), op.id, gatedPlaybook());
    const { nonce } = (await stored(op.id)).approvals[0]!;
    f.clock.now = new Date(f.clock.now.getTime() + 20 * 60_000);

    // Act: the job runs twice (a retry after a crash).
    await createApprovalReminderJob(f.deps)(nonceJob(op.id, nonce));
    await createApprovalReminderJob(f.deps)(nonceJob(op.id, nonce));

    // Assert
    const reminders = remindersIn(op.rootTs!);
    expect(reminders).toHaveLength(1);
    expect(reminders[0]!.options).toEqual({ once: true, broadcast: true });
    expect(reminders[0]!.message.text).toMatch(
      /^⏰ Apply the Kubernetes upgrade of production .*<https:\/\/example\.slack\.com\/archives\/C0MAINTPRD\/p\d+\|The request> expires in 10 min · \d\d:\d\d UTC; .*<@U0CAROL> <@U0DAVE>\n#\d+ approval reminder: gated$/,
    );
    const after = await stored(op.id);
    expect(after.approvals[0]!.remindedAt).toBe(f.clock.now.toISOString());
    expect(after.audit.filter((e) => e.event.startsWith('approval reminder'))).toHaveLength(1);
  });

  it('sends no reminder for a request already decided, or when reminders are off', async () => {
    // Arrange
    const decided = await started({ steps: [step('gated')] });
    await walkOperation(context(), decided.id, gatedPlaybook());
    const { nonce } = (await stored(decided.id)).approvals[0]!;
    await f.deps.store.update(decided.id, (o) => ({
      ...o,
      state: 'running',
      approvals: o.approvals.map((a) => ({ ...a, state: 'approved' as const, by: 'U0CAROL' })),
    }));
    f.deps.timeouts.approvalReminderMs = 0;
    await f.deps.lock.release('production', decided.id);
    const quiet = await started({ rootTs: '1700000000.000103', steps: [step('gated')] });
    f.queue.added.length = 0;

    // Act
    await createApprovalReminderJob(f.deps)(nonceJob(decided.id, nonce));
    await walkOperation(context(), quiet.id, gatedPlaybook());

    // Assert
    expect(remindersIn(decided.rootTs!)).toEqual([]);
    expect(f.queue.added.map((j) => j.name)).toEqual(['approval-expiry']);
  });

  it('mentions the operator who started the operation in its completion and in its failure', async () => {
    // Arrange
    const completing = await started({ startedBy: 'U0BOB', rootTs: '1700000000.000101', steps: [step('first')] });

    // Act
    await walkOperation(context(), completing.id, playbook([]));
    await f.deps.lock.release('production', completing.id);
    const failing = await started({ startedBy: 'U0BOB', rootTs: '1700000000.000102', steps: [step('first')] });
    await walkOperation(context(), failing.id, playbook([], { runStep: () => Promise.reject(new StepFailure('upgrade-k8s failed')) }));

    // Assert
    expect(f.chat.thread(completing.rootTs!).at(-1)).toMatch(/^#\d+ <@U0BOB> follow-up$/m);
    expect(f.chat.thread(failing.rootTs!).at(-1)).toMatch(
      /^#\d+ ❌ Stopped at .*upgrade-k8s failed\. .* <@U0BOB> started it; <@U0ALICE> asked for it$/,
    );
  });
});

describe('a stop reads where things stand', () => {
  /** A cluster that never answers: every read waits until its signal gives up. */
  function silentContext(probeMs: number): WalkStart {
    const hang = (signal?: AbortSignal): Promise<never> =>
      new Promise((_, reject) => signal?.addEventListener('abort', () => reject(new Error('no answer')), { once: true }));
    const talosctl = {
      binary: 'talosctl',
      run: (_args: string[], _nodes: string[], options?: { signal?: AbortSignal }) => hang(options?.signal),
    };
    const session = { kube: { listNodes: (signal: AbortSignal) => hang(signal) } } as unknown as ClusterSession;
    const deps = { ...f.deps, timeouts: { ...f.deps.timeouts, probeMs } };
    return { ...context(), deps, session, talosctl: talosctl as unknown as Talosctl };
  }

  it('records the stop when no read answers within the probe timeout, each node unknown, with a Cancel only the nonce of this stop works', async () => {
    // Arrange
    const op = await started({ rootTs: '1700000000.000201', steps: [step('first'), step('second')] });

    // Act
    await walkOperation(silentContext(50), op.id, playbook([], { runStep: () => Promise.reject(new StepFailure('upgrade-k8s failed')) }));

    // Assert
    const failed = await stored(op.id);
    expect(failed.state).toBe('failed');
    const stop = f.chat.posts.find((p) => p.threadTs === op.rootTs && p.message.text.includes('❌ Stopped'))!;
    const shown = JSON.stringify(stop.message.blocks);
    for (const node of ['10.0.30.11', '10.0.30.12', '10.0.30.13'])
      expect(shown).toContain(`${node}: version unknown · Ready unknown · cordoned unknown · not touched by this operation`);
    expect(shown).toContain('Not run: ');
    expect(shown).toContain(`"value":"${op.id}.${failed.stopNonce}"`);
    const lifecycle = f.lifecycle();
    const click = { op: failed, messageTs: stop.ts, user: 'U0BOB' };
    const stale = await lifecycle.cancelPlan({ ...click, nonce: 'an0ldst0p' });
    const cancelled = await lifecycle.cancelPlan({ ...click, nonce: failed.stopNonce! });
    expect([stale.ok, cancelled.ok]).toEqual([false, true]);
    expect((await stored(op.id)).state).toBe('cancelled');
    expect(await f.deps.lock.holder('production')).toBeUndefined();
  });
});

describe('the end of an operation', () => {
  it('attaches the maintenance record whatever the ending, and gives back what the playbook kept only once it is final', async () => {
    // Arrange: one operation completes, one stops at a failure, then is cancelled.
    const released: string[] = [];
    const book = playbook([], { ended: (_deps, op) => Promise.resolve(void released.push(`${op.id}:${op.state}`)) });
    const failing = playbook([], { runStep: () => Promise.reject(new StepFailure('the apply failed')) });
    const ok = await started({ kind: 'k8s-upgrade', steps: [step('first')], startedAt: '2026-12-01T09:59:00.000Z', startedBy: 'U0ALICE' });
    const bad = await started({
      kind: 'k8s-upgrade',
      cluster: 'production',
      steps: [step('first')],
      startedAt: '2026-12-01T09:59:00.000Z',
      startedBy: 'U0ALICE',
    });

    // Act
    await walkOperation(context(), ok.id, book);
    await runEnded(ok.id, book);
    await f.deps.lock.release('production', ok.id);
    await f.deps.lock.acquire('production', bad.id);
    await walkOperation(context(), bad.id, failing);
    await runEnded(bad.id, book);
    const afterFailure = [...released];
    await f.lifecycle().cancel(bad.id, 'U0BOB');
    await f.deps.opsQueue.add('operation-ended', { opId: bad.id }, { jobId: `${bad.id}-ended-cancelled` });
    await runEnded(bad.id, book);

    // Assert
    const titles = f.chat.files.filter((file) => file.filename.endsWith('-maintenance-record.md')).map((file) => file.title);
    expect(titles).toEqual([
      `Maintenance record ${ok.id} (completed)`,
      `Maintenance record ${bad.id} (failed)`,
      `Maintenance record ${bad.id} (cancelled)`,
    ]);
    expect(f.chat.files.find((file) => file.title.includes('(failed)'))?.content).toContain('- Result: failed (the apply failed)');
    expect(afterFailure).toEqual([`${ok.id}:completed`]);
    expect(released).toContain(`${bad.id}:cancelled`);
    expect(f.queue.added.filter((j) => j.name === 'operation-ended').map((j) => j.opts.jobId)).toEqual([
      `${ok.id}-ended-completed`,
      `${bad.id}-ended-failed`,
      `${bad.id}-ended-cancelled`,
    ]);
  });

  it('attaches no record for an operation that never started', async () => {
    // Arrange
    const op = await f.operation({ rootTs: '1700000000.000001', state: 'cancelled', endedAt: '2026-12-01T10:00:00.000Z' });

    // Act
    await createEndedJob(f.deps, {})({ data: { opId: op.id } } as Job);

    // Assert
    expect(f.chat.uploads).toEqual([]);
  });

  it('expires a plan nobody started within PLAN_TTL_MINUTES: its buttons go and it ends, and a younger plan stays', async () => {
    // Arrange
    const ttl = f.deps.timeouts.planTtlMs;
    const old = await f.operation({
      rootTs: '1700000000.000001',
      state: 'planned',
      planNonce: 'nonce1234',
      createdAt: new Date(f.clock.now.getTime() - ttl - 1).toISOString(),
    });
    const young = await f.operation({
      rootTs: '1700000000.000002',
      state: 'planned',
      planNonce: 'nonce5678',
      createdAt: new Date(f.clock.now.getTime() - ttl + 60_000).toISOString(),
    });

    // Act
    await createPlanExpiryJob(f.deps)({ data: { opId: old.id } } as Job);
    await createPlanExpiryJob(f.deps)({ data: { opId: young.id } } as Job);

    // Assert
    const expired = await stored(old.id);
    expect(expired.state).toBe('cancelled');
    expect(expired.planNonce).toBeUndefined();
    expect(expired.reason).toContain('the plan expired');
    expect(expired.audit.map((e) => e.event)).toContain('plan expired');
    expect(JSON.stringify(f.chat.edits.find((e) => e.ts === old.rootTs)?.message.blocks)).not.toContain('talos-op-start');
    expect(f.queue.added.map((j) => j.opts.jobId)).toContain(`${old.id}-ended-cancelled`);
    expect((await stored(young.id)).state).toBe('planned');
  });
});

describe('an operation of a kind no playbook runs', () => {
  const job = (opId: string): Job => ({ id: 'job-1', name: 'operation-run', data: { opId } }) as unknown as Job;

  it('fails its preflight and its run at once, with the reason, and changes nothing', async () => {
    // Arrange: a kind a newer version might store, and this one has no playbook for.
    const { createRunJob } = await import('../../../../jobs/engine/walk.ts');
    const planned = await f.operation({ kind: 'cluster-reboot', state: 'preflight' });
    const running = await f.operation({ kind: 'cluster-reboot', state: 'running', steps: [step('first')] });

    // Act
    const preflight = createPreflightJob(f.deps, { 'k8s-upgrade': playbook([]) })(job(planned.id));
    const run = createRunJob(f.deps, { 'k8s-upgrade': playbook([]) })(job(running.id));

    // Assert
    await expect(preflight).rejects.toMatchObject({
      name: 'UnknownKindError',
      code: 'kind-unknown',
      message: expect.stringContaining('kind cluster-reboot, which no playbook runs'),
    });
    await expect(run).rejects.toMatchObject({ name: 'UnknownKindError', code: 'kind-unknown' });
    expect(await stored(planned.id)).toEqual(planned);
    expect(await stored(running.id)).toEqual(running);
    expect([...f.chat.posts, ...f.chat.edits]).toEqual([]);
  });
});
