import { describe, expect, it } from 'vitest';
import type { MoveDeps } from '../../../../../jobs/engine/lifecycle/deps.ts';
import { planAgain } from '../../../../../jobs/engine/lifecycle/recover.ts';
import { KIND_POLICY } from '../../../../../jobs/playbooks/index.ts';
import type { Operation } from '../../../../../src/ops/operation.ts';
import { anOperation } from '../../../../support/builders.ts';

/**
 * The replan rules on an in-memory store: what `planAgain` writes is what the change it hands the
 * audit returns, applied to the stored operation, as the compare-and-set would.
 */
function memoryDeps(stored: Operation) {
  const state = { op: stored, created: [] as Operation[], queued: [] as string[] };
  const deps = {
    now: () => new Date('2026-12-05T03:00:00.000Z'),
    audit: {
      transition: (_id: string, _entry: unknown, change: (o: Operation) => Operation | undefined) => {
        const next = change(state.op);
        if (next !== undefined) state.op = next;
        return Promise.resolve({ op: state.op, changed: next !== undefined });
      },
    },
    store: {
      create: (op: Operation) => {
        state.created.push(op);
        return Promise.resolve(op);
      },
    },
    opsQueue: {
      add: (name: string, data: { opId: string }) => {
        state.queued.push(`${name} ${data.opId}`);
        return Promise.resolve({});
      },
    },
    chat: { update: () => Promise.resolve() },
    // The playbooks' own answers (which kinds are planned again, which requested again), with no message texts.
    policy: { ...KIND_POLICY, presentation: () => ({}) },
  } as unknown as MoveDeps;
  return { deps, state };
}

const click = (op: Operation, user = 'U0BOB') => ({ op, nonce: 'n-1', user, messageTs: undefined });

describe('planAgain', () => {
  it.each([
    ['a refused upgrade', 'talos-upgrade', 'refused'],
    ['a refused Terraform change', 'terraform-apply', 'refused'],
    ['a failed Terraform change', 'terraform-apply', 'failed'],
    ['a cancelled Terraform change', 'terraform-apply', 'cancelled'],
  ] as const)('asks again for %s, once, as a new operation whose preflight runs afresh', async (_case, kind, from) => {
    const op = anOperation({
      kind,
      state: from,
      target: { node: '10.0.30.12', version: 'v1.12.1', fromVersion: 'v1.11.6' },
      data: { parent: { op: 'op-parent0001', step: 'upgrade-10.0.30.12' } },
    });
    const { deps, state } = memoryDeps(op);

    const result = await planAgain(deps, click(op));

    expect(result.ok).toBe(true);
    expect(state.created).toHaveLength(1);
    const child = state.created[0]!;
    expect(state.op.data?.['replannedAs']).toBe(child.id);
    // Only what the command asked for: what the preflight derived (the running version) is derived again.
    expect(child).toMatchObject({
      kind,
      cluster: op.cluster,
      requestedBy: 'U0BOB',
      state: 'preflight',
      target: { node: '10.0.30.12', version: 'v1.12.1' },
      data: { parent: { op: 'op-parent0001', step: 'upgrade-10.0.30.12' } },
    });
    expect(child.target.fromVersion).toBeUndefined();
    expect(state.queued).toEqual([expect.stringContaining(child.id)]);
  });

  it.each([
    // A stopped operation has its Retry and Rollback: asking for it again would start it twice.
    ['a failed upgrade', 'talos-upgrade', 'failed', 'it can be requested again once it was refused'],
    ['a cancelled removal', 'node-remove', 'cancelled', 'it can be requested again once it was refused'],
    ['a running upgrade', 'talos-upgrade', 'running', 'it can be requested again once it was refused'],
    ['a running Terraform change', 'terraform-apply', 'running', 'plan again once it has ended'],
    ['a completed Terraform change', 'terraform-apply', 'completed', 'plan again once it has ended'],
  ] as const)('refuses %s, changing nothing', async (_case, kind, from, phrase) => {
    const op = anOperation({ kind, state: from });
    const { deps, state } = memoryDeps(op);

    const result = await planAgain(deps, click(op));

    expect(result).toMatchObject({ ok: false, code: 'stale' });
    expect(result.ok ? '' : result.message).toContain(phrase);
    expect(state.created).toEqual([]);
    expect(state.queued).toEqual([]);
    expect(state.op).toBe(op);
  });

  it.each([
    ['talos-upgrade', 'requested'],
    ['terraform-apply', 'planned'],
  ] as const)('asks again for a refused %s only once: the second click names the first new operation', async (kind, verb) => {
    const op = anOperation({ kind, state: 'refused' });
    const { deps, state } = memoryDeps(op);
    await planAgain(deps, click(op));
    const first = state.created[0]!.id;

    const again = await planAgain(deps, click(op, 'U0ALICE'));

    expect(again).toMatchObject({ ok: false, code: 'already' });
    expect(again.ok ? '' : again.message).toContain(`was already ${verb} again as \`${first}\``);
    expect(state.created).toHaveLength(1);
  });
});
