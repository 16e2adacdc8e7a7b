import { describe, expect, it } from 'vitest';
import type { Approval } from '../../src/ops/operation.ts';
import type { SimEvent } from '../sim/index.ts';
import { checkRestoreInvariants, type RestoreEvidence } from './restore-invariants.ts';

const T0 = Date.parse('2026-12-02T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString();

const event = (kind: SimEvent['kind'], at: number, fields: Partial<SimEvent> = {}): SimEvent => ({
  at,
  cluster: 'staging',
  kind,
  ...fields,
});
const bootstrap = (at: number, error?: string): SimEvent =>
  event('etcd-bootstrap', at, { node: '10.0.20.201', detail: 'recover-from /snapshots/staging-rev1.db', ...(error ? { error } : {}) });

const approved = (by: string[], at = T0): Approval => ({
  step: 'reset',
  nonce: 'n1',
  messageTs: '1.1',
  requestedAt: iso(at - 60_000),
  expiresAt: iso(at + 60_000),
  state: 'approved',
  by: by.at(-1),
  at: iso(at),
  needed: 2,
  given: by.map((b) => ({ by: b, at: iso(at) })),
});

function evidence(fields: Partial<RestoreEvidence> = {}, approvals = [approved(['U0CAROL', 'U0DAVE'])]): RestoreEvidence {
  return {
    cluster: 'staging',
    events: [event('reset', T0 + 1000, { node: '10.0.20.201' }), bootstrap(T0 + 5000)],
    op: { id: 'op-1', state: 'completed', requestedBy: 'U0ALICE', startedBy: 'U0ALICE', approvals },
    ended: true,
    ...fields,
  };
}

describe('the etcd restore rehearsal invariants', () => {
  it('hold for one bootstrap after resets two distinct approvers approved', () => {
    expect(checkRestoreInvariants(evidence())).toEqual([]);
  });

  it('find a second bootstrap --recover-from, even one the node refused', () => {
    const violations = checkRestoreInvariants(
      evidence({ events: [event('reset', T0 + 1000), bootstrap(T0 + 5000), bootstrap(T0 + 9000, 'AlreadyExists')] }),
    );
    expect(violations.map((v) => v.invariant)).toEqual(['second-bootstrap-recover-from', 'second-bootstrap-recover-from']);
  });

  it('count only bootstraps that recover from a snapshot, of this cluster', () => {
    const other = { ...bootstrap(T0 + 6000), cluster: 'production' };
    const plain = { ...bootstrap(T0 + 7000), detail: 'plain' };
    expect(checkRestoreInvariants(evidence({ events: [event('reset', T0 + 1000), bootstrap(T0 + 5000), other, plain] }))).toEqual([]);
  });

  it('find a reset approved by one person twice, by the requester, or before the approval', () => {
    const judge = (approval: Approval) => checkRestoreInvariants(evidence({}, [approval])).map((v) => v.invariant);
    expect(judge(approved(['U0CAROL', 'U0CAROL']))).toEqual(['reset-without-two-approvers']);
    expect(judge(approved(['U0ALICE', 'U0DAVE']))).toEqual(['reset-without-two-approvers']);
    expect(judge(approved(['U0CAROL', 'U0DAVE'], T0 + 2000))).toEqual(['reset-without-two-approvers']);
  });

  it('find a rehearsal that never ended', () => {
    const op = { id: 'op-1', state: 'running' as const, requestedBy: 'U0ALICE', startedBy: 'U0ALICE', approvals: [] };
    expect(checkRestoreInvariants(evidence({ ended: false, events: [], op })).map((v) => v.invariant)).toEqual(['operation-outcome']);
  });
});
