import { describe, expect, it } from 'vitest';
import type { Operation, Step } from '../../src/ops/operation.ts';
import type { SimEvent } from '../sim/index.ts';
import { auditThread, canaryLeak, checkInvariants, controlPlanesDownTogether, nodeUpgradedTwice, operationOutcome, upgradeWithoutApproval, type RunEvidence } from './invariants.ts';

const CPS = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
const T0 = Date.parse('2026-11-30T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString();

function cpStep(node: string, status: Step['status'] = 'done'): Step {
  return { id: `node-${node}`, kind: 'upgrade-control-plane', node, nodeName: `cp-${node.slice(-2)}`, host: 'pve1', status, startedAt: iso(T0) };
}

const LABEL = (node: string): string => `control plane cp-${node.slice(-2)} (${node}, host pve1)`;

/** The record and thread of a clean, completed three-node upgrade. */
function completedRun(): RunEvidence {
  const events: SimEvent[] = CPS.flatMap((node, i) => [
    { at: T0 + 1000 * (i + 1), cluster: 'production', node, kind: 'upgrade-start' as const },
    { at: T0 + 1000 * (i + 1) + 100, cluster: 'production', node, kind: 'reboot' as const },
    { at: T0 + 1000 * (i + 1) + 300, cluster: 'production', node, kind: 'up' as const },
  ]);
  const auditEvents = [
    'preflight passed, plan posted',
    'override: no staging rehearsal',
    'started',
    'step started: etcd snapshot, copied off-cluster',
    'etcd snapshot taken',
    ...CPS.flatMap((node) => [`approved ${node}`, `step started: ${LABEL(node)}`, `upgraded: ${LABEL(node)}`]),
    'step started: verify every node runs the target, final health gate',
    'completed',
  ];
  const op = {
    id: 'op-abc123',
    kind: 'talos-upgrade',
    cluster: 'production',
    channel: 'C0MAINTPRD',
    requestedBy: 'U0ALICE',
    createdAt: iso(T0),
    state: 'completed',
    revision: 40,
    target: { version: 'v1.12.11' },
    startedAt: iso(T0),
    steps: [
      { id: 'snapshot', kind: 'snapshot', status: 'done', startedAt: iso(T0) },
      ...CPS.map((n) => cpStep(n)),
      { id: 'verify', kind: 'verify', status: 'done', startedAt: iso(T0) },
    ],
    approvals: CPS.map((node, i) => ({ step: `node-${node}`, nonce: `n${i}`, messageTs: `1.${i}`, requestedAt: iso(T0), expiresAt: iso(T0 + 3_600_000), state: 'approved', by: 'U0CAROL', at: iso(T0 + 1000 * (i + 1) - 50) })),
    audit: auditEvents.map((event, i) => ({ seq: i + 1, at: iso(T0), actor: 'bot', event })),
    refusals: [],
    confirmedReview: [],
    notes: [],
  } as unknown as Operation;
  return {
    cluster: 'production',
    controlPlanes: CPS,
    target: 'v1.12.11',
    events,
    op,
    ended: true,
    thread: auditEvents.map((event, i) => ({ ts: `2.${i}`, firstText: `#${i + 1} ${event}`, text: `#${i + 1} ${event}` })),
    versionsAfter: Object.fromEntries(CPS.map((n) => [n, 'v1.12.11'])),
    approvers: ['U0CAROL', 'U0DAVE'],
    canary: 'CANARY-1234',
    texts: [{ source: 'the bot log', text: '{"msg":"bot started"}' }],
  };
}

describe('the chaos invariants', () => {
  it('find nothing wrong with a clean completed upgrade', () => {
    expect(checkInvariants(completedRun())).toEqual([]);
  });

  it('catch a node upgraded twice', () => {
    const run = completedRun();
    const events = [...run.events, { at: T0 + 5000, cluster: 'production', node: CPS[1]!, kind: 'upgrade-start' as const }];
    expect(nodeUpgradedTwice({ ...run, events })).toEqual([{ invariant: 'node-upgraded-twice', detail: '10.0.30.12 was upgraded 2 times' }]);
  });

  it('catch two control planes out of service at once', () => {
    const run = completedRun();
    const events: SimEvent[] = [
      { at: T0, cluster: 'production', node: CPS[0], kind: 'upgrade-start' },
      { at: T0 + 10, cluster: 'production', node: CPS[1], kind: 'upgrade-start' },
      { at: T0 + 20, cluster: 'production', node: CPS[0], kind: 'up' },
    ];
    expect(controlPlanesDownTogether({ ...run, events }).map((v) => v.invariant)).toEqual(['control-planes-down-together']);
    expect(controlPlanesDownTogether(run)).toEqual([]);
  });

  it('catch an upgrade whose approval came after it, or from someone who is not an approver', () => {
    const run = completedRun();
    const approvals = run.op!.approvals.map((a, i) => (i === 0 ? { ...a, at: iso(T0 + 5000) } : i === 1 ? { ...a, by: 'U0EVE' } : a));
    const violations = upgradeWithoutApproval({ ...run, op: { ...run.op!, approvals } });
    expect(violations.map((v) => v.detail.split(' ')[0])).toEqual(['10.0.30.11', '10.0.30.12']);
  });

  it('accept a stop with its reason in the thread, and reject one without', () => {
    const run = completedRun();
    const reason = '10.0.30.12 came back on v1.11.5, not v1.12.11';
    const op = { ...run.op!, state: 'failed' as const, reason };
    const stopped = { ...run, op, thread: [...run.thread, { ts: '3.0', firstText: `#20 ❌ Stopped at x: ${reason}.`, text: `#20 ❌ Stopped at x: ${reason}.` }] };
    expect(operationOutcome(stopped)).toEqual([]);
    expect(operationOutcome({ ...run, op })).toEqual([{ invariant: 'operation-outcome', detail: `stopped (${reason}), but the reason is not in its thread` }]);
    expect(operationOutcome({ ...run, ended: false, op: { ...run.op!, state: 'running' } })).toEqual([{ invariant: 'operation-outcome', detail: 'the operation did not end: it is running' }]);
  });

  it('reject a completed operation that left a node on the old version', () => {
    const run = completedRun();
    expect(operationOutcome({ ...run, versionsAfter: { ...run.versionsAfter, [CPS[2]!]: 'v1.11.5' } })).toEqual([
      { invariant: 'operation-outcome', detail: 'completed, but 10.0.30.13 runs v1.11.5' },
    ]);
  });

  it('catch a duplicated, a missing and a reordered audit reply', () => {
    const run = completedRun();
    const [a, b, c, ...rest] = run.thread;
    expect(auditThread({ ...run, thread: [a!, b!, b!, c!, ...rest] })).toEqual([{ invariant: 'audit-thread', detail: '#2 is posted more than once' }]);
    expect(auditThread({ ...run, thread: [a!, c!, ...rest] })).toEqual([{ invariant: 'audit-thread', detail: '#2 of 16 never reached the thread' }]);
    expect(auditThread({ ...run, thread: [a!, c!, b!, ...rest] })).toEqual([{ invariant: 'audit-thread', detail: '#2 is posted after #3' }]);
  });

  it('catch a step missing from the audit, or recorded twice', () => {
    const run = completedRun();
    const without = run.op!.audit.filter((e) => e.event !== `upgraded: ${LABEL(CPS[1]!)}`).map((e, i) => ({ ...e, seq: i + 1 }));
    const thread = without.map((e) => ({ ts: `4.${e.seq}`, firstText: `#${e.seq} ${e.event}`, text: `#${e.seq} ${e.event}` }));
    expect(auditThread({ ...run, op: { ...run.op!, audit: without }, thread })).toEqual([{ invariant: 'audit-thread', detail: `the audit has no "upgraded: ${LABEL(CPS[1]!)}"` }]);
    const twice = [...run.op!.audit, { seq: 17, at: iso(T0), actor: 'bot', event: 'started' }];
    const thread17 = [...run.thread, { ts: '5.0', firstText: '#17 started', text: '#17 started' }];
    expect(auditThread({ ...run, op: { ...run.op!, audit: twice }, thread: thread17 })).toEqual([{ invariant: 'audit-thread', detail: 'the audit has "started" 2 times' }]);
  });

  it('catch the credential canary wherever it shows up', () => {
    const run = completedRun();
    const texts = [...run.texts, { source: 'Slack traffic', text: 'token: CANARY-1234' }];
    expect(canaryLeak({ ...run, texts })).toEqual([{ invariant: 'canary-leak', detail: 'the credential canary appears in Slack traffic' }]);
  });
});
