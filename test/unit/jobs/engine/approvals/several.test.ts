import { describe, expect, it } from 'vitest';
import { approveOneOfSeveral } from '../../../../../jobs/engine/approvals/several.ts';
import type { MoveDeps } from '../../../../../jobs/engine/lifecycle/deps.ts';
import type { Approval, Operation } from '../../../../../src/ops/operation.ts';
import { anOperation } from '../../../../support/builders.ts';
import { inventoryOf } from '../../../../support/inventory-yaml.ts';

const NOW = new Date('2026-12-05T03:00:00.000Z');
const NONCE = 'n-reset-1';

function request(overrides: Partial<Approval> = {}): Approval {
  return {
    step: 'reset-10.0.20.11',
    nonce: NONCE,
    messageTs: '1700000000.000200',
    requestedAt: '2026-12-05T02:50:00.000Z',
    expiresAt: '2026-12-05T03:50:00.000Z',
    state: 'pending',
    ...overrides,
  };
}

function waiting(approval: Approval): Operation {
  return anOperation({
    kind: 'etcd-restore',
    cluster: 'staging',
    state: 'awaiting-approval',
    requestedBy: 'U0ALICE',
    startedBy: 'U0BOB',
    steps: [{ id: 'reset-10.0.20.11', kind: 'reset', node: '10.0.20.11', status: 'pending' }],
    approvals: [approval],
  });
}

/**
 * Deps that answer what a refusal reads (the inventory, the clock, the window policy) and fail any
 * write: a refused click must change nothing.
 */
function readOnlyDeps(op: Operation, windows = false): MoveDeps {
  const write = (): never => {
    throw new Error('a refused approval wrote');
  };
  return {
    inventory: inventoryOf({ staging: { environment: 'staging', approvers: ['U0ALICE', 'U0CAROL', 'U0DAVE'] } }),
    now: () => NOW,
    store: { get: () => Promise.resolve(op) },
    audit: { transition: write, record: write },
    opsQueue: { add: write },
    chat: { update: write, post: write },
    policy: { heldByWindows: () => windows, presentation: () => ({}) },
  } as unknown as MoveDeps;
}

const click = (op: Operation, user: string) => ({ op, nonce: NONCE, user, messageTs: '1700000000.000200' });

describe('approveOneOfSeveral refuses, changing nothing,', () => {
  it.each([
    ['the requester', 'U0ALICE', request(), 'four-eyes', 'other than the person who requested or started'],
    ['the starter', 'U0BOB', request(), 'four-eyes', 'other than the person who requested or started'],
    [
      'the same approver a second time',
      'U0CAROL',
      request({ given: [{ by: 'U0CAROL', at: '2026-12-05T02:55:00.000Z' }] }),
      'already',
      'You already approved this step (1 of 2)',
    ],
    ['a button of another request', 'U0CAROL', request({ nonce: 'n-older' }), 'stale', 'not one'],
  ])('%s', async (_who, user, approval, code, phrase) => {
    const op = waiting(approval);
    const result = await approveOneOfSeveral(readOnlyDeps(op), click(op, user), 2);
    expect(result).toMatchObject({ ok: false, code });
    expect(result.ok ? '' : result.message).toContain(phrase);
    expect(result.ok ? '' : result.message).toContain('Nothing changed.');
  });

  it('says how many approvers the step needs, in words', async () => {
    const op = waiting(request());
    const result = await approveOneOfSeveral(readOnlyDeps(op), click(op, 'U0ALICE'), 3);
    expect(result.ok ? '' : result.message).toContain('needs three approvers of *staging*');
  });

  it('refuses outside the maintenance window the cluster declares, before anything is recorded', async () => {
    const op = anOperation({ ...waiting(request()), cluster: 'production', kind: 'talos-upgrade' });
    const deps = {
      ...readOnlyDeps(op, true),
      inventory: inventoryOf({
        production: { maintenanceWindows: "[{ start: '0 22 * * *', durationMinutes: 60, timeZone: 'UTC' }]" },
      }),
    };
    const result = await approveOneOfSeveral(deps, click(op, 'U0CAROL'), 2);
    expect(result).toMatchObject({ ok: false, code: 'window' });
  });
});
