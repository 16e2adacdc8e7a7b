import { describe, expect, it } from 'vitest';
import type { Operation } from '../../../../../src/ops/operation.ts';
import { followUpsOf, linkFollowUp } from '../../../../../jobs/playbooks/terraform-apply/follow-up-link.ts';
import { anOperation } from '../../../../support/builders.ts';

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

const UPGRADE = { op: 'op-up1', kind: 'kubernetes' as const, version: 'v1.34.2' };

describe('the link between an upgrade and its Terraform follow-up', () => {
  it('follows up an upgrade only for a kind whose declared version the plan moves', () => {
    // Arrange
    const upgrades = { kubernetes: { op: 'op-up1', version: 'v1.34.2' }, talos: { op: 'op-up0', version: 'v1.12.1' } };

    // Act
    const moved = followUpsOf(upgrades, { kubernetes: true, talos: false });
    const none = followUpsOf(upgrades, {});

    // Assert
    expect(moved).toEqual([UPGRADE]);
    expect(none).toEqual([]);
  });

  it('records the plan, then its apply, and keeps the applied follow-up when a later plan comes', async () => {
    // Arrange
    const store = oneOperationStore(anOperation({ id: 'op-up1', kind: 'k8s-upgrade', state: 'completed' }));

    // Act
    await linkFollowUp(store, { id: 'op-tf1' }, [UPGRADE], { state: 'planned', commit: 'c1', at: '2026-11-30T09:00:00.000Z' });
    const planned = store.state.op.terraformFollowUp;
    await linkFollowUp(store, { id: 'op-tf1' }, [UPGRADE], { state: 'applied', commit: 'c1', at: '2026-11-30T09:10:00.000Z' });
    await linkFollowUp(store, { id: 'op-tf1' }, [UPGRADE], { state: 'applied', commit: 'c1', at: '2026-11-30T09:11:00.000Z' });
    await linkFollowUp(store, { id: 'op-tf2' }, [UPGRADE], { state: 'planned', commit: 'c2', at: '2026-11-30T10:00:00.000Z' });

    // Assert
    expect(planned).toEqual({ op: 'op-tf1', state: 'planned', commit: 'c1', at: '2026-11-30T09:00:00.000Z' });
    expect(store.state.op.terraformFollowUp).toEqual({ op: 'op-tf1', state: 'applied', commit: 'c1', at: '2026-11-30T09:10:00.000Z' });
    expect(store.state.writes).toBe(2);
  });
});
