import { beforeEach, describe, expect, it } from 'vitest';
import { aTestPlaybook } from '../../../support/test-playbook.ts';
import type { Playbook, StepResult, WalkContext, WalkStart } from '../../../../jobs/engine/playbook.ts';
import type { Recorded } from '../../../../jobs/engine/record.ts';
import { walkOperation } from '../../../../jobs/engine/walk.ts';
import type { ClusterSession } from '../../../../src/cluster/cluster-session.ts';
import type { Operation } from '../../../../src/ops/operation.ts';
import type { Talosctl } from '../../../../src/talos/talosctl.ts';
import { engineFixture, type EngineFixture } from '../../../support/engine-fixture.ts';
import { useRedisFixture } from '../../../support/redis-fixture.ts';

const redis = useRedisFixture();
let f: EngineFixture;

beforeEach(() => {
  f = engineFixture(redis);
});

/** A one-step playbook whose step is `run`. */
function playbook(run: (ctx: WalkContext, op: Operation) => Promise<StepResult>): Playbook {
  return aTestPlaybook({
    runStep: (ctx, op) => run(ctx, op),
    complete: () => Promise.resolve({ validation: 'done', followUp: { text: 'follow-up' } }),
  });
}

function start(): WalkStart {
  const cluster = f.deps.inventory.clusters[0]!;
  return { deps: f.deps, cluster, session: {} as ClusterSession, talosctl: {} as Talosctl, log: f.deps.logger };
}

async function running(): Promise<Operation> {
  const op = await f.operation({
    rootTs: '1700000000.000001',
    state: 'running',
    steps: [{ id: 's1', kind: 'k8s-apply', status: 'pending' }],
  });
  await f.deps.lock.acquire(op.cluster, op.id);
  return op;
}

describe("a playbook step's record of its operation, through the walk", () => {
  it('records its data and what it asked of the node, with no way to the queue, the run lease or a store write', async () => {
    // Arrange
    const op = await running();
    let seen: Record<string, unknown> = {};
    const book = playbook(async (ctx) => {
      seen = {
        ...ctx.deps,
        storeUpdate: (ctx.deps.store as Record<string, unknown>).update,
        acquire: (ctx.deps.lock as Record<string, unknown>).acquire,
      };
      await ctx.record({ data: { cordoned: 'talos-prd-w-1' }, step: { id: 's1', issuedAt: '2026-12-05T07:00:00.000Z' } });
      return { event: 'ran', detail: 'ok' };
    });

    // Act
    await walkOperation(start(), op.id, book);

    // Assert
    const after = (await f.deps.store.get(op.id))!;
    expect(after.state).toBe('completed');
    expect(after.data).toEqual({ cordoned: 'talos-prd-w-1' });
    expect(after.steps[0]).toMatchObject({ status: 'done', issuedAt: '2026-12-05T07:00:00.000Z' });
    expect(seen).not.toHaveProperty('opsQueue');
    expect(seen).not.toHaveProperty('runLease');
    expect(seen.storeUpdate).toBeUndefined();
    expect(seen.acquire).toBeUndefined();
  });

  it('changes nothing once the operation was cancelled under the step, and says so', async () => {
    // Arrange: a cancel lands while the step runs.
    const op = await running();
    let outcome: Recorded | undefined;
    const book = playbook(async (ctx) => {
      await f.deps.store.update(op.id, (o) => ({ ...o, state: 'cancelled' }));
      outcome = await ctx.record((o) => ({ notes: [...o.notes, 'late'], data: { late: true } }));
      return { event: 'ran', detail: 'ok' };
    });

    // Act
    await walkOperation(start(), op.id, book);

    // Assert
    const after = (await f.deps.store.get(op.id))!;
    expect(outcome).toMatchObject({ recorded: false, why: 'not-walking' });
    expect(after.state).toBe('cancelled');
    expect(after.notes).not.toContain('late');
    expect(after.data).not.toEqual({ late: true });
  });
});
