import { describe, expect, it } from 'vitest';
import { EngineFieldError, followUpLinker, recorder, type RecordPatch } from '../../../../jobs/engine/record.ts';
import type { Operation } from '../../../../src/ops/operation.ts';
import { anOperation } from '../../../support/builders.ts';

/** One stored operation, updated as the store's compare-and-set does: a mutation that returns nothing writes nothing. */
function oneOperationStore(op: Operation) {
  const state = { op, writes: 0 };
  return {
    state,
    update(id: string, mutate: (o: Operation) => Operation | undefined) {
      if (id !== state.op.id) return Promise.reject(new Error(`operation ${id} does not exist`));
      const next = mutate(structuredClone(state.op));
      if (next !== undefined) {
        state.op = next;
        state.writes += 1;
      }
      return Promise.resolve({ op: state.op, changed: next !== undefined });
    },
  };
}

const running = (fields: Partial<Operation> = {}): Operation =>
  anOperation({
    id: 'op-rec1',
    state: 'running',
    steps: [{ id: 's1', kind: 'upgrade-worker', node: '10.0.0.21', status: 'running', startedAt: '2026-12-05T07:00:00.000Z' }],
    ...fields,
  });

describe("a playbook's record of its operation", () => {
  it('writes the playbook fields and the step details it names, while the operation runs', async () => {
    // Arrange
    const store = oneOperationStore(running());
    const record = recorder(store, 'op-rec1');

    // Act
    const outcome = await record({
      data: { cordoned: 'talos-prd-w-1' },
      notes: ['a note'],
      step: { id: 's1', issuedAt: '2026-12-05T07:01:00.000Z', detail: 'issued' },
    });

    // Assert
    expect(outcome.recorded).toBe(true);
    expect(store.state.op.data).toEqual({ cordoned: 'talos-prd-w-1' });
    expect(store.state.op.notes).toEqual(['a note']);
    expect(store.state.op.steps[0]).toMatchObject({ status: 'running', issuedAt: '2026-12-05T07:01:00.000Z', detail: 'issued' });
    expect(outcome.op).toBe(store.state.op);
  });

  it.each(['cancelled', 'failed', 'completed', 'paused'] as const)('changes nothing on a %s operation, and says so', async (state) => {
    // Arrange
    const store = oneOperationStore(running({ state, data: { before: true } }));
    const record = recorder(store, 'op-rec1');

    // Act
    const plain = await record({ data: { after: true } });
    const asked = await record(() => ({ notes: ['late'] }));

    // Assert
    expect(plain).toEqual({ recorded: false, why: 'not-walking', op: store.state.op });
    expect(asked.recorded).toBe(false);
    expect(store.state.writes).toBe(0);
    expect(store.state.op.data).toEqual({ before: true });
    expect(store.state.op.notes).toEqual([]);
  });

  it('records a function of the stored operation, or nothing when it returns nothing', async () => {
    // Arrange: another run recorded the reset first.
    const store = oneOperationStore(running({ data: { resets: { '10.0.0.11': 'earlier' } } }));
    const record = recorder(store, 'op-rec1');
    const once = (o: Operation): RecordPatch | undefined =>
      (o.data as { resets: Record<string, string> }).resets['10.0.0.11'] === undefined
        ? { data: { resets: { '10.0.0.11': 'ours' } } }
        : undefined;

    // Act
    const outcome = await record(once);

    // Assert
    expect(outcome).toEqual({ recorded: false, why: 'unchanged', op: store.state.op });
    expect(store.state.op.data).toEqual({ resets: { '10.0.0.11': 'earlier' } });
  });

  it("refuses a patch of the engine's fields, by type and at run time, and writes nothing", async () => {
    // Arrange
    const store = oneOperationStore(running());
    const record = recorder(store, 'op-rec1');

    // Act
    // @ts-expect-error: the state is the engine's
    const state = record({ state: 'completed' }).catch((error: unknown) => error);
    // @ts-expect-error: a step's status is the engine's
    const status = record({ step: { id: 's1', status: 'done' } }).catch((error: unknown) => error);
    // @ts-expect-error: approvals are the engine's
    const approvals = record(() => ({ approvals: [] })).catch((error: unknown) => error);

    // Assert
    expect(await state).toBeInstanceOf(EngineFieldError);
    expect(String(await state)).toContain('`state`');
    expect(String(await status)).toContain('`step.status`');
    expect(await approvals).toBeInstanceOf(EngineFieldError);
    expect(store.state.writes).toBe(0);
    expect(store.state.op.state).toBe('running');
  });
});

const UPGRADE = { op: 'op-up1', kind: 'kubernetes' as const, version: 'v1.34.2' };

describe("the engine's link of a Terraform change to the upgrade it follows up", () => {
  it('records the plan, then its apply, and keeps the applied follow-up when a later plan comes', async () => {
    // Arrange
    const store = oneOperationStore(anOperation({ id: 'op-up1', kind: 'k8s-upgrade', state: 'completed' }));
    const linkFollowUp = followUpLinker(store);

    // Act
    await linkFollowUp({ id: 'op-tf1' }, [UPGRADE], { state: 'planned', commit: 'c1', at: '2026-11-30T09:00:00.000Z' });
    const planned = store.state.op.terraformFollowUp;
    await linkFollowUp({ id: 'op-tf1' }, [UPGRADE], { state: 'applied', commit: 'c1', at: '2026-11-30T09:10:00.000Z' });
    await linkFollowUp({ id: 'op-tf1' }, [UPGRADE], { state: 'applied', commit: 'c1', at: '2026-11-30T09:11:00.000Z' });
    await linkFollowUp({ id: 'op-tf2' }, [UPGRADE], { state: 'planned', commit: 'c2', at: '2026-11-30T10:00:00.000Z' });

    // Assert
    expect(planned).toEqual({ op: 'op-tf1', state: 'planned', commit: 'c1', at: '2026-11-30T09:00:00.000Z' });
    expect(store.state.op.terraformFollowUp).toEqual({ op: 'op-tf1', state: 'applied', commit: 'c1', at: '2026-11-30T09:10:00.000Z' });
    expect(store.state.writes).toBe(2);
  });
});
