import type { Operation } from '../../src/ops/operation.ts';

/**
 * A stored operation as the preflight leaves it: a planned production Talos upgrade with no
 * steps, approvals or audit yet. Tests name only what they are about in `overrides`.
 */
export function anOperation(overrides: Partial<Operation> = {}): Operation {
  return {
    id: 'op-1a2b3c4d5e',
    kind: 'talos-upgrade',
    cluster: 'production',
    channel: 'C0MAINTPRD',
    requestedBy: 'U0ALICE',
    createdAt: '2026-11-29T22:00:00.000Z',
    state: 'planned',
    revision: 1,
    target: { version: 'v1.12.1', fromVersion: 'v1.11.6' },
    steps: [],
    approvals: [],
    refusals: [],
    audit: [],
    confirmedReview: [],
    notes: [],
    ...overrides,
  };
}
