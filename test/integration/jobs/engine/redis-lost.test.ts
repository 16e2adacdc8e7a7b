import type { Job } from 'bullmq';
import { beforeEach, describe, expect, it } from 'vitest';
import { aTestPlaybook } from '../../../support/test-playbook.ts';
import { createLifecycle } from '../../../../jobs/engine/lifecycle/lifecycle.ts';
import type { Playbook } from '../../../../jobs/engine/playbook.ts';
import { createPreflightJob } from '../../../../jobs/engine/preflight.ts';
import { createRunJob } from '../../../../jobs/engine/walk.ts';
import { KIND_POLICY } from '../../../../jobs/playbooks/index.ts';
import { RedisEpochLostError } from '../../../../src/ops/cluster-lock.ts';
import type { Operation } from '../../../../src/ops/operation.ts';
import { engineFixture, type EngineFixture } from '../../../support/engine-fixture.ts';
import { useRedisFixture } from '../../../support/redis-fixture.ts';

// Once Redis lost the bot's data, what it holds (nothing after a flush, an older copy after a restore) is
// no record to act on: no run, no preflight and no person's move goes on, and the answer says why.

const redis = useRedisFixture();
let f: EngineFixture;
const REASON =
  'Redis lost the data the bot keeps: its operations, cluster locks and approvals may be missing or out of date, so the bot refuses to act; it was brought back from an older copy';

beforeEach(() => {
  f = engineFixture(redis);
});

const job = (opId: string) => ({ id: 'job-1', data: { opId } }) as unknown as Job;

function playbook(ran: string[]): Playbook {
  return aTestPlaybook({
    preflight: () => {
      ran.push('preflight');
      return Promise.resolve({ refusals: [], notes: [], steps: [], target: {} });
    },
    approvalMessage: () => Promise.resolve({ text: 'never' }),
    runStep: (_ctx, _op, s) => {
      ran.push(s.id);
      return Promise.resolve({ event: `ran ${s.id}`, detail: 'ok' });
    },
    complete: () => Promise.resolve({ validation: 'ok', followUp: { text: 'done' } }),
  });
}

describe('after Redis lost the bot data', () => {
  it('runs no step and no preflight of what Redis still holds', async () => {
    // Arrange: a running operation and one in preflight, as an older copy brought back would hold them.
    const ran: string[] = [];
    const running = await f.operation({ rootTs: '1700000000.000001', steps: [{ id: 'first', kind: 'k8s-apply', status: 'pending' }] });
    const planning = await f.operation({ state: 'preflight' });
    const deps = { ...f.deps, redisLost: () => REASON };

    // Act
    await createRunJob(deps, { 'k8s-upgrade': playbook(ran) })(job(running.id));
    await createPreflightJob(deps, { 'k8s-upgrade': playbook(ran) })(job(planning.id));

    // Assert
    expect(ran).toEqual([]);
    expect((await f.deps.store.get(running.id))?.audit).toEqual(running.audit);
    expect((await f.deps.store.get(planning.id))?.state).toBe('preflight');
  });

  it('refuses every move a person asks for, saying what happened and what to do, and stores no request', async () => {
    // Arrange
    const lifecycle = createLifecycle({
      ...f.deps,
      planTtlMs: f.deps.timeouts.planTtlMs,
      policy: KIND_POLICY,
      onCancelled: () => Promise.resolve(),
      redisLost: () => REASON,
    });
    const op: Operation = await f.operation({ state: 'planned', rootTs: '1700000000.000001' });
    const click = { op, nonce: 'n1', user: 'U0ALICE', messageTs: '1700000000.000001' };

    // Act
    const moves = await Promise.all([
      lifecycle.start(click),
      lifecycle.decide(click, 'approved'),
      lifecycle.retry(click),
      lifecycle.cancel(op.id, 'U0ALICE'),
      lifecycle.stopAfterStep(click),
    ]);
    const request = lifecycle.request({ ...op, id: 'op-new1', state: 'preflight' });

    // Assert
    const refusal = /^Redis lost the data the bot keeps: .* Nothing was changed\. .*REDIS_EPOCH_RESEED=true/;
    expect(moves.map((m) => (m.ok ? 'moved' : [m.code, refusal.test(m.message)]))).toEqual(Array(5).fill(['redis-lost', true]));
    await expect(request).rejects.toBeInstanceOf(RedisEpochLostError);
    expect(await f.deps.store.get('op-new1')).toBeUndefined();
    expect((await f.deps.store.get(op.id))?.state).toBe('planned');
  });
});
