import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/ops/operation.ts';
import type { CallRecord, SimEvent } from '../sim/index.ts';
import {
  auditThread,
  botProcessEnded,
  canaryLeak,
  checkInvariants,
  controlPlanesDownTogether,
  expectedMilestones,
  gatedCallWithoutFreshApproval,
  nodesOf,
  nodeUpgradedTwice,
  operationOutcome,
  installsByNode,
  readyWithoutSlack,
  retryReissuedUpgrade,
  rollbackWithoutApproval,
  transientStopNotResumed,
  type NodeSeen,
  stepOutsideWindow,
  tofuApplyWithoutFreshApply,
  upgradeWithoutApproval,
  type RecordedOperation,
  type RunEvidence,
} from './invariants.ts';

const CPS = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
const T0 = Date.parse('2026-11-30T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString();

function cpStep(node: string, status: Step['status'] = 'done'): Step {
  return {
    id: `node-${node}`,
    kind: 'upgrade-control-plane',
    node,
    nodeName: `cp-${node.slice(-2)}`,
    host: 'pve1',
    status,
    startedAt: iso(T0),
  };
}

const LABEL = (node: string): string => `control plane cp-${node.slice(-2)} (${node}, host pve1)`;

let callIds = 0;
/** A talosctl call on production as the bot makes it: command first, then the flags. */
function talosctl(command: string, node: string, at: number): CallRecord {
  callIds += 1;
  return {
    id: callIds,
    bin: 'talosctl',
    argv: [command, '--talosconfig', '/creds/production', '--endpoints', '10.0.30.12', '--nodes', node],
    cwd: '/',
    cluster: 'production',
    startedAt: at,
    endedAt: at + 50,
    exitCode: 0,
  };
}

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
    approvals: CPS.map((node, i) => ({
      step: `node-${node}`,
      nonce: `n${i}`,
      messageTs: `1.${i}`,
      requestedAt: iso(T0),
      expiresAt: iso(T0 + 3_600_000),
      state: 'approved',
      by: 'U0CAROL',
      at: iso(T0 + 1000 * (i + 1) - 50),
    })),
    audit: auditEvents.map((event, i) => ({ seq: i + 1, at: iso(T0), actor: 'bot', event })),
    refusals: [],
    confirmedReview: [],
    notes: [],
  } as unknown as RecordedOperation;
  return {
    cluster: 'production',
    controlPlanes: CPS,
    target: 'v1.12.11',
    events,
    // Each upgrade call comes after its node's approval and just before the node accepts the upgrade.
    calls: CPS.map((node, i) => talosctl('upgrade', node, T0 + 1000 * (i + 1) - 20)),
    op,
    operations: [op],
    inventory: { environment: 'production', maintenanceWindows: [], allowOutsideWindows: false },
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

  it('catch a node upgraded twice: a second image installed and rebooted into', () => {
    const run = completedRun();
    const events: SimEvent[] = [
      ...run.events,
      { at: T0 + 5000, cluster: 'production', node: CPS[1]!, kind: 'upgrade-start' },
      { at: T0 + 5100, cluster: 'production', node: CPS[1]!, kind: 'reboot' },
      { at: T0 + 5300, cluster: 'production', node: CPS[1]!, kind: 'up' },
    ];
    expect(nodeUpgradedTwice({ ...run, events })).toEqual([
      {
        invariant: 'node-upgraded-twice',
        detail: '10.0.30.12 installed an image and rebooted 2 times (2 upgrade request(s) accepted)',
      },
    ]);
  });

  it('count no upgrade for a request the node refused, one that stalled before its reboot, or the reboot of a rollback', () => {
    const run = completedRun();
    const node = CPS[1]!;
    const events: SimEvent[] = [
      ...run.events,
      { at: T0 + 5000, cluster: 'production', node, kind: 'upgrade-rejected' },
      { at: T0 + 6000, cluster: 'production', node, kind: 'rollback' },
      { at: T0 + 6100, cluster: 'production', node, kind: 'reboot' },
      { at: T0 + 6300, cluster: 'production', node, kind: 'up' },
      { at: T0 + 7000, cluster: 'production', node, kind: 'upgrade-start' },
      { at: T0 + 7100, cluster: 'production', node, kind: 'upgrade-failed' },
      { at: T0 + 7200, cluster: 'production', node, kind: 'reboot' },
      { at: T0 + 7300, cluster: 'production', node, kind: 'up' },
      { at: T0 + 8000, cluster: 'production', node: CPS[2]!, kind: 'upgrade-start' },
    ];

    expect(installsByNode({ ...run, events }).get(node)).toBe(1);
    expect(nodeUpgradedTwice({ ...run, events })).toEqual([]);
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
    const stopped = {
      ...run,
      op,
      thread: [...run.thread, { ts: '3.0', firstText: `#20 ❌ Stopped at x: ${reason}.`, text: `#20 ❌ Stopped at x: ${reason}.` }],
    };
    expect(operationOutcome(stopped)).toEqual([]);
    expect(operationOutcome({ ...run, op })).toEqual([
      { invariant: 'operation-outcome', detail: `stopped (${reason}), but the reason is not in its thread` },
    ]);
    expect(operationOutcome({ ...run, ended: false, op: { ...run.op!, state: 'running' } })).toEqual([
      { invariant: 'operation-outcome', detail: 'the operation did not end: it is running' },
    ]);
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
    expect(auditThread({ ...run, thread: [a!, b!, b!, c!, ...rest] })).toEqual([
      { invariant: 'audit-thread', detail: '#2 is posted more than once' },
    ]);
    expect(auditThread({ ...run, thread: [a!, c!, ...rest] })).toEqual([
      { invariant: 'audit-thread', detail: '#2 of 16 never reached the thread' },
    ]);
    expect(auditThread({ ...run, thread: [a!, c!, b!, ...rest] })).toEqual([
      { invariant: 'audit-thread', detail: '#2 is posted after #3' },
    ]);
  });

  it('catch a step missing from the audit, or recorded twice', () => {
    const run = completedRun();
    const without = run.op!.audit.filter((e) => e.event !== `upgraded: ${LABEL(CPS[1]!)}`).map((e, i) => ({ ...e, seq: i + 1 }));
    const thread = without.map((e) => ({ ts: `4.${e.seq}`, firstText: `#${e.seq} ${e.event}`, text: `#${e.seq} ${e.event}` }));
    expect(auditThread({ ...run, op: { ...run.op!, audit: without }, thread })).toEqual([
      { invariant: 'audit-thread', detail: `the audit has no "upgraded: ${LABEL(CPS[1]!)}"` },
    ]);
    const twice = [...run.op!.audit, { seq: 17, at: iso(T0), actor: 'bot', event: 'started' }];
    const thread17 = [...run.thread, { ts: '5.0', firstText: '#17 started', text: '#17 started' }];
    expect(auditThread({ ...run, op: { ...run.op!, audit: twice }, thread: thread17 })).toEqual([
      { invariant: 'audit-thread', detail: 'the audit has "started" 2 times' },
    ]);
  });

  it('catch the credential canary wherever it shows up', () => {
    const run = completedRun();
    const texts = [...run.texts, { source: 'Slack traffic', text: 'token: CANARY-1234' }];
    expect(canaryLeak({ ...run, texts })).toEqual([{ invariant: 'canary-leak', detail: 'the credential canary appears in Slack traffic' }]);
  });

  it('count a spent approval as the one that let its step run', () => {
    const run = completedRun();
    const approvals = run.op!.approvals.map((a, i) => (i === 0 ? { ...a, state: 'spent' as const } : a));
    const steps = run.op!.steps.map((st) => (st.id === `node-${CPS[0]}` ? { ...st, status: 'failed' as const } : st));
    const op = { ...run.op!, state: 'failed' as const, steps, approvals };

    expect(expectedMilestones(op)).toContain(`approved ${CPS[0]}`);
    expect(upgradeWithoutApproval({ ...run, op })).toEqual([]);
  });
});

describe('the talosctl calls an approval gates', () => {
  it('read the nodes of a call however talosctl is given them', () => {
    expect(nodesOf(['upgrade', '--nodes', '10.0.30.11,10.0.30.12'])).toEqual(['10.0.30.11', '10.0.30.12']);
    expect(nodesOf(['rollback', '-n', '10.0.30.11', '--nodes=10.0.30.13'])).toEqual(['10.0.30.11', '10.0.30.13']);
    expect(nodesOf(['version', '--endpoints', '10.0.30.11'])).toEqual([]);
  });

  /** A node-rollback operation for `node` with one approval, and the evidence of a run that rolled `node` back at T0 + 10 s. */
  function rollbackRun(node: string, approval: { state: string; at: number }): RunEvidence {
    const run = completedRun();
    const rollback = {
      ...run.op!,
      id: 'op-rb0001',
      kind: 'node-rollback',
      createdAt: iso(T0 + 8000),
      target: { node },
      steps: [{ id: 'rollback', kind: 'rollback-node', node, status: 'done', startedAt: iso(T0 + 9500) }],
      approvals: [
        {
          step: 'rollback',
          nonce: 'r1',
          messageTs: '7.1',
          requestedAt: iso(T0 + 8500),
          expiresAt: iso(T0 + 3_600_000),
          state: approval.state,
          by: 'U0CAROL',
          at: iso(approval.at),
        },
      ],
      audit: [],
    } as unknown as RecordedOperation;
    return { ...run, operations: [run.op!, rollback], calls: [...run.calls, talosctl('rollback', CPS[1]!, T0 + 10_000)] };
  }

  it('accept a rollback approved, or approved and spent, before the call', () => {
    expect(rollbackWithoutApproval(rollbackRun(CPS[1]!, { state: 'approved', at: T0 + 9000 }))).toEqual([]);
    expect(rollbackWithoutApproval(rollbackRun(CPS[1]!, { state: 'spent', at: T0 + 9000 }))).toEqual([]);
  });

  it('catch a rollback with no rollback operation, approved only after the call, still pending, or approved for another node', () => {
    const bare = completedRun();
    const unapproved = rollbackWithoutApproval({ ...bare, calls: [...bare.calls, talosctl('rollback', CPS[1]!, T0 + 10_000)] });
    expect(unapproved).toEqual([
      {
        invariant: 'rollback-without-approval',
        detail: `talosctl rollback reached ${CPS[1]} at ${iso(T0 + 10_000)} with no approved node-rollback operation before it`,
      },
    ]);
    expect(rollbackWithoutApproval(rollbackRun(CPS[1]!, { state: 'approved', at: T0 + 11_000 })).map((v) => v.invariant)).toEqual([
      'rollback-without-approval',
    ]);
    expect(rollbackWithoutApproval(rollbackRun(CPS[1]!, { state: 'pending', at: T0 + 9000 })).map((v) => v.invariant)).toEqual([
      'rollback-without-approval',
    ]);
    expect(rollbackWithoutApproval(rollbackRun(CPS[2]!, { state: 'approved', at: T0 + 9000 })).map((v) => v.invariant)).toEqual([
      'rollback-without-approval',
    ]);
  });

  /**
   * The first control plane's step failed at T0 + 1.5 s after its first upgrade call, and a Retry
   * called `talosctl upgrade` on it again at T0 + 3 s; `approvals` are that step's approvals.
   */
  function retriedRun(approvals: { state: string; at: number }[]): RunEvidence {
    const run = completedRun();
    const node = CPS[0]!;
    const stepStarted = `step started: ${LABEL(node)}`;
    const audit = [
      ...run.op!.audit.filter((a) => a.event === 'started'),
      { event: stepStarted, at: T0 + 960 },
      { event: 'stopped', at: T0 + 1500 },
      { event: stepStarted, at: T0 + 2990 },
      { event: `upgraded: ${LABEL(node)}`, at: T0 + 3500 },
    ].map((a, i) => ({ seq: i + 1, actor: 'bot', event: a.event, at: typeof a.at === 'number' ? iso(a.at) : a.at }));
    const others = run.op!.approvals.filter((a) => a.step !== `node-${node}`);
    const mine = approvals.map((a, i) => ({
      step: `node-${node}`,
      nonce: `m${i}`,
      messageTs: `8.${i}`,
      requestedAt: iso(T0),
      expiresAt: iso(T0 + 3_600_000),
      state: a.state,
      by: 'U0CAROL',
      at: iso(a.at),
    }));
    const op = { ...run.op!, audit, approvals: [...mine, ...others] } as unknown as RecordedOperation;
    return { ...run, op, operations: [op], calls: [...run.calls, talosctl('upgrade', node, T0 + 3000)] };
  }

  it('accept a retry that a fresh approval authorised, the first one spent', () => {
    expect(
      gatedCallWithoutFreshApproval(
        retriedRun([
          { state: 'spent', at: T0 + 950 },
          { state: 'approved', at: T0 + 2500 },
        ]),
      ),
    ).toEqual([]);
  });

  it('catch a retry that ran on the approval given before the step failed', () => {
    const stale = `talosctl upgrade of ${CPS[0]} at ${iso(T0 + 3000)}: the latest approval (${iso(T0 + 950)}) came before node-${CPS[0]} failed at ${iso(T0 + 1500)}`;
    expect(gatedCallWithoutFreshApproval(retriedRun([{ state: 'approved', at: T0 + 950 }]))).toEqual([
      { invariant: 'gated-call-without-fresh-approval', detail: stale },
    ]);
    expect(gatedCallWithoutFreshApproval(retriedRun([{ state: 'spent', at: T0 + 950 }]))).toEqual([
      { invariant: 'gated-call-without-fresh-approval', detail: stale },
    ]);
  });

  /**
   * The third control plane failed at T0 + 3.5 s and a Retry from the second one at T0 + 5 s
   * called `talosctl upgrade` on the second again at T0 + 6 s; `second` is the approval of its retry, if any.
   */
  function retriedFromEarlierRun(firstState: 'approved' | 'spent', second?: number): RunEvidence {
    const run = completedRun();
    const [a, b] = [CPS[1]!, CPS[2]!];
    const extra = [
      { event: `step started: ${LABEL(b)}`, at: T0 + 2960 },
      { event: 'stopped', at: T0 + 3500 },
      { event: `retry requested from node-${a}`, at: T0 + 5000 },
      { event: `step started: ${LABEL(a)}`, at: T0 + 5900 },
    ];
    const audit = [
      ...run.op!.audit.slice(0, 11),
      ...extra.map((x, i) => ({ seq: 12 + i, actor: 'U0ALICE', event: x.event, at: iso(x.at) })),
    ];
    const approvals = run.op!.approvals.map((ap) => (ap.step === `node-${a}` ? { ...ap, state: firstState } : ap));
    const fresh = second === undefined ? [] : [{ ...approvals[1]!, nonce: 'fresh', state: 'approved' as const, at: iso(second) }];
    const op = { ...run.op!, audit, approvals: [...approvals, ...fresh] } as RecordedOperation;
    return { ...run, op, operations: [op], calls: [...run.calls, talosctl('upgrade', a, T0 + 6000)] };
  }

  it('ask a fresh approval of every step a Retry re-runs, not only of the step that failed', () => {
    const stale = `talosctl upgrade of ${CPS[1]} at ${iso(T0 + 6000)}: the latest approval (${iso(T0 + 1950)}) came before node-${CPS[1]} was retried from node-${CPS[1]} at ${iso(T0 + 5000)}`;

    expect(gatedCallWithoutFreshApproval(retriedFromEarlierRun('spent', T0 + 5500))).toEqual([]);
    expect(gatedCallWithoutFreshApproval(retriedFromEarlierRun('spent'))).toEqual([
      { invariant: 'gated-call-without-fresh-approval', detail: stale },
    ]);
    expect(gatedCallWithoutFreshApproval(retriedFromEarlierRun('approved'))).toEqual([
      { invariant: 'gated-call-without-fresh-approval', detail: stale },
    ]);
  });

  it('catch an upgrade call with no approval before it, and one resting on an approval spent by an attempt that never failed', () => {
    const run = completedRun();
    const late = { ...run.op!, approvals: run.op!.approvals.map((a, i) => (i === 1 ? { ...a, at: iso(T0 + 2500) } : a)) };
    expect(gatedCallWithoutFreshApproval({ ...run, operations: [late] })).toEqual([
      {
        invariant: 'gated-call-without-fresh-approval',
        detail: `talosctl upgrade of ${CPS[1]} at ${iso(T0 + 1980)}: op-abc123 has no approval of node-${CPS[1]} before it`,
      },
    ]);
    const spent = { ...run.op!, approvals: run.op!.approvals.map((a, i) => (i === 2 ? { ...a, state: 'spent' as const } : a)) };
    expect(gatedCallWithoutFreshApproval({ ...run, operations: [spent] })).toEqual([
      {
        invariant: 'gated-call-without-fresh-approval',
        detail: `talosctl upgrade of ${CPS[2]} at ${iso(T0 + 2980)}: the approval of ${iso(T0 + 2950)} is spent, and no failure or Retry of node-${CPS[2]} follows the call`,
      },
    ]);
  });

  it('catch an upgrade call on a control plane no operation has a step for, and leave workers alone', () => {
    const run = completedRun();
    const calls = [...run.calls, talosctl('upgrade', '10.0.30.21', T0 + 4000), talosctl('upgrade', CPS[0]!, T0 + 4000)];
    expect(gatedCallWithoutFreshApproval({ ...run, calls, operations: [] }).map((v) => v.detail.split(': ')[1])).toEqual([
      `no operation has a step node-${CPS[0]}`,
      `no operation has a step node-${CPS[1]}`,
      `no operation has a step node-${CPS[2]}`,
      `no operation has a step node-${CPS[0]}`,
    ]);
  });
});

describe('the maintenance windows', () => {
  // T0 is 10:00 UTC, 11:00 in Berlin.
  const MORNING = { start: '0 9 * * *', durationMinutes: 120, timeZone: 'UTC' };
  const BERLIN_ELEVEN = { start: '0 11 * * *', durationMinutes: 30, timeZone: 'Europe/Berlin' };
  const NIGHT = { start: '0 22 * * *', durationMinutes: 60, timeZone: 'UTC' };

  it('accept steps started inside a declared window, in its own time zone', () => {
    const run = completedRun();
    expect(stepOutsideWindow({ ...run, inventory: { ...run.inventory, maintenanceWindows: [NIGHT, MORNING] } })).toEqual([]);
    expect(stepOutsideWindow({ ...run, inventory: { ...run.inventory, maintenanceWindows: [BERLIN_ELEVEN] } })).toEqual([]);
  });

  it('catch every step started outside the windows', () => {
    const run = completedRun();
    const violations = stepOutsideWindow({ ...run, inventory: { ...run.inventory, maintenanceWindows: [NIGHT] } });
    expect(violations.map((v) => v.detail)).toEqual(
      run.op!.steps.map((s) => `op-abc123 started ${s.id} at ${iso(T0)}, outside every maintenance window, with no override`),
    );
  });

  it('accept a step an approver overrode before it started, and no other override', () => {
    const run = completedRun();
    const inventory = { ...run.inventory, maintenanceWindows: [NIGHT] };
    const overridden = (override: { by: string; at: number }): RunEvidence => {
      const steps = run.op!.steps.map((st) => ({ ...st, windowOverride: { by: override.by, at: iso(override.at) } }));
      return { ...run, inventory, operations: [{ ...run.op!, steps }] };
    };

    expect(stepOutsideWindow(overridden({ by: 'U0DAVE', at: T0 - 1000 }))).toEqual([]);
    expect(stepOutsideWindow(overridden({ by: 'U0EVE', at: T0 - 1000 }))[0]?.detail).toBe(
      `op-abc123 started snapshot at ${iso(T0)}, outside every maintenance window, overridden by U0EVE, who is not an approver`,
    );
    expect(stepOutsideWindow(overridden({ by: 'U0DAVE', at: T0 + 1000 }))[0]?.detail).toBe(
      `op-abc123 started snapshot at ${iso(T0)}, outside every maintenance window, overridden only at ${iso(T0 + 1000)}, after it started`,
    );
  });

  it('leave alone a cluster that allows work outside its windows, and staging', () => {
    const run = completedRun();
    expect(
      stepOutsideWindow({ ...run, inventory: { environment: 'production', maintenanceWindows: [NIGHT], allowOutsideWindows: true } }),
    ).toEqual([]);
    expect(
      stepOutsideWindow({ ...run, inventory: { environment: 'staging', maintenanceWindows: [NIGHT], allowOutsideWindows: false } }),
    ).toEqual([]);
  });
});

describe('the bot process and its readiness', () => {
  it('finds a bot process that ended by itself', () => {
    expect(botProcessEnded({ ...completedRun(), botExits: 0 })).toEqual([]);
    expect(botProcessEnded({ ...completedRun(), botExits: 1 })).toEqual([
      { invariant: 'bot-process-ended', detail: 'the bot process ended by itself 1 time(s) during the run' },
    ]);
  });

  it('finds /readyz saying ready while Slack was away', () => {
    expect(readyWithoutSlack({ ...completedRun(), readyWhileSlackAway: [{ at: T0, status: 503 }] })).toEqual([]);
    expect(
      readyWithoutSlack({
        ...completedRun(),
        readyWhileSlackAway: [
          { at: T0, status: 503 },
          { at: T0 + 250, status: 200 },
        ],
      }),
    ).toEqual([
      {
        invariant: 'ready-without-slack',
        detail: `/readyz answered 200 at ${iso(T0 + 250)}, while Slack's Socket Mode was away and the bot had no connection`,
      },
    ]);
    expect(checkInvariants({ ...completedRun(), botExits: 2 }).map((v) => v.invariant)).toContain('bot-process-ended');
  });

  describe('after a Retry', () => {
    const TARGET = 'v1.12.11';
    const OLD = 'v1.11.6';
    const seen = (version: string, stage = 'running'): NodeSeen => ({ version, bootId: `boot-${version}`, stage });
    /** The run stopped at the second control plane; the Retry was clicked at T0 + 10 s. */
    const CLICK = T0 + 10_000;
    function retried(nodes: Record<string, NodeSeen>, extra: Partial<RunEvidence> = {}): RunEvidence {
      const run = completedRun();
      return {
        ...run,
        transient: true,
        retryClicks: [{ at: CLICK, nonce: 'r1', nodes }],
        calls: [],
        events: [{ at: T0 + 1000, cluster: 'production', node: CPS[0], kind: 'up', toVersion: TARGET }],
        ...extra,
      };
    }

    it('allow an upgrade of a node that still ran the old version, Ready, at the click', () => {
      const run = retried({ [CPS[0]!]: seen(TARGET), [CPS[1]!]: seen(OLD), [CPS[2]!]: seen(OLD) });
      const calls = [talosctl('upgrade', CPS[1]!, CLICK + 500), talosctl('upgrade', CPS[2]!, CLICK + 2000)];
      expect(retryReissuedUpgrade({ ...run, calls })).toEqual([]);
    });

    it('catch an upgrade sent to a node that ran the target at the click', () => {
      const run = retried({ [CPS[0]!]: seen(TARGET), [CPS[1]!]: seen(TARGET), [CPS[2]!]: seen(OLD) });
      const calls = [talosctl('upgrade', CPS[1]!, CLICK + 500)];
      expect(retryReissuedUpgrade({ ...run, calls })).toEqual([
        {
          invariant: 'retry-reissued-upgrade',
          detail: `talosctl upgrade of ${CPS[1]} at ${iso(CLICK + 500)}, after the Retry of ${iso(CLICK)}: ${CPS[1]} already ran ${TARGET}`,
        },
      ]);
    });

    it('catch an upgrade sent to a node that came back on the target after the click', () => {
      const run = retried({ [CPS[0]!]: seen(TARGET), [CPS[1]!]: seen(OLD, 'rebooting'), [CPS[2]!]: seen(OLD) });
      const events: SimEvent[] = [
        { at: CLICK - 200, cluster: 'production', node: CPS[1]!, kind: 'reboot' },
        { at: CLICK + 300, cluster: 'production', node: CPS[1]!, kind: 'up', toVersion: TARGET },
      ];
      const calls = [talosctl('upgrade', CPS[1]!, CLICK + 900)];
      expect(retryReissuedUpgrade({ ...run, events, calls }).map((v) => v.detail)).toEqual([
        `talosctl upgrade of ${CPS[1]} at ${iso(CLICK + 900)}, after the Retry of ${iso(CLICK)}: ${CPS[1]} already ran ${TARGET}`,
      ]);
    });

    it('catch an upgrade sent to a node whose upgrade was in flight, with no boot seen since', () => {
      const run = retried({ [CPS[0]!]: seen(TARGET), [CPS[1]!]: seen(OLD), [CPS[2]!]: seen(OLD) });
      const events: SimEvent[] = [{ at: CLICK - 2000, cluster: 'production', node: CPS[1]!, kind: 'upgrade-start', toVersion: TARGET }];
      const calls = [talosctl('upgrade', CPS[1]!, CLICK + 500)];
      expect(retryReissuedUpgrade({ ...run, events, calls }).map((v) => v.detail)).toEqual([
        `talosctl upgrade of ${CPS[1]} at ${iso(CLICK + 500)}, after the Retry of ${iso(CLICK)}: the upgrade state of ${CPS[1]} was unknown (upgrade-start at ${iso(CLICK - 2000)}, and no boot since)`,
      ]);
      // A node between boots at the click, with no event recorded in the run, is unknown too.
      const rebooting = retried({ [CPS[0]!]: seen(TARGET), [CPS[1]!]: seen(OLD, 'booting'), [CPS[2]!]: seen(OLD) });
      expect(retryReissuedUpgrade({ ...rebooting, calls })).toHaveLength(1);
    });

    it('judge a call against the latest click before it only, and ignore calls before the first click', () => {
      const run = retried({ [CPS[0]!]: seen(TARGET), [CPS[1]!]: seen(OLD), [CPS[2]!]: seen(OLD) });
      const calls = [talosctl('upgrade', CPS[0]!, CLICK - 9000)];
      expect(retryReissuedUpgrade({ ...run, calls })).toEqual([]);
    });

    it('catch a transient stop still offering its Retry at the end, and not one that offered none', () => {
      const base = completedRun();
      const op = {
        ...base.op!,
        state: 'failed',
        reason: 'talosctl etcd status failed',
        retry: { step: 'node-x', nonce: 'r2', state: 'offered' },
      };
      const run: RunEvidence = { ...base, op: op as RecordedOperation, transient: true, retryClicks: [] };
      expect(transientStopNotResumed(run)).toEqual([
        {
          invariant: 'transient-stop-not-resumed',
          detail:
            'the fault was transient and cleared, yet op-abc123 is still stopped (talosctl etcd status failed) with a Retry offered, after 0 Retry click(s)',
        },
      ]);
      expect(transientStopNotResumed({ ...run, transient: false })).toEqual([]);
      expect(transientStopNotResumed({ ...run, op: { ...op, retry: undefined } as RecordedOperation })).toEqual([]);
      expect(transientStopNotResumed({ ...run, op: { ...op, state: 'completed' } as RecordedOperation })).toEqual([]);
    });

    it('let the audit repeat the steps a Retry re-ran, once per Retry, and no more', () => {
      const run = completedRun();
      const node = CPS[1]!;
      const rerun = [`approved ${node}`, `step started: ${LABEL(node)}`];
      const first = run.op!.audit.map((a) => a.event);
      const at = first.indexOf(`upgraded: ${LABEL(CPS[0]!)}`) + 1;
      const events = [...first.slice(0, at), ...rerun, 'stopped', `retry requested from node-${node}`, ...first.slice(at)];
      const audit = events.map((event, i) => ({ seq: i + 1, at: iso(T0), actor: 'bot', event }));
      const thread = events.map((event, i) => ({ ts: `2.${i}`, firstText: `#${i + 1} ${event}`, text: `#${i + 1} ${event}` }));
      expect(auditThread({ ...run, op: { ...run.op!, audit }, thread })).toEqual([]);

      // The first node was not re-run: its start twice is still wrong.
      const wrong = [...events, `step started: ${LABEL(CPS[0]!)}`];
      expect(
        auditThread({
          ...run,
          op: { ...run.op!, audit: wrong.map((event, i) => ({ seq: i + 1, at: iso(T0), actor: 'bot', event })) },
          thread: wrong.map((event, i) => ({ ts: `2.${i}`, firstText: `#${i + 1} ${event}`, text: `#${i + 1} ${event}` })),
        }),
      ).toEqual([{ invariant: 'audit-thread', detail: `the audit has "step started: ${LABEL(CPS[0]!)}" 2 times` }]);
    });
  });
});

describe('a Terraform change', () => {
  const OP = 'op-tf0001';
  /** A Terraform change on production: the Apply at T0+1s, audit entries at the given times. */
  function change(
    audit: { event: string; at: number; actor?: string }[],
    approvals: RecordedOperation['approvals'] = [],
  ): RecordedOperation {
    return {
      ...completedRun().op!,
      id: OP,
      kind: 'terraform-apply',
      steps: [
        { id: 'snapshot', kind: 'snapshot', status: 'done' },
        { id: 'tofu-apply', kind: 'tofu-apply', status: 'done' },
        { id: 'gate', kind: 'apply-gate', status: 'done' },
      ],
      approvals,
      audit: audit.map((a, i) => ({ seq: i + 1, at: iso(a.at), actor: a.actor ?? 'bot', event: a.event })),
    } as RecordedOperation;
  }
  function applyAt(at: number, opId = OP): CallRecord {
    return {
      id: 9,
      bin: 'tofu',
      argv: ['apply', '-input=false', '-no-color', `/var/lib/plans/${opId}/tfplan`],
      cwd: '/tf',
      cluster: 'production',
      startedAt: at,
    };
  }
  const run = (op: RecordedOperation, calls: CallRecord[]): RunEvidence => ({ ...completedRun(), op, operations: [op], calls, events: [] });
  const approval = (at: number, state: 'approved' | 'spent' = 'approved') => ({
    step: 'tofu-apply',
    nonce: `a${at}`,
    messageTs: '1.1',
    requestedAt: iso(at - 500),
    expiresAt: iso(at + 3_600_000),
    state,
    by: 'U0CAROL',
    at: iso(at),
  });
  const applied = { event: 'applied', at: T0 + 1000, actor: 'U0CAROL' };
  const stopped = { event: 'stopped', at: T0 + 5000 };
  const retried = { event: 'retry requested from snapshot', at: T0 + 6000, actor: 'U0ALICE' };

  it('hold when the Apply that started the change precedes the apply and no stop came between', () => {
    expect(tofuApplyWithoutFreshApply(run(change([applied]), [applyAt(T0 + 3000)]))).toEqual([]);
    // A stop after the call does not reach back.
    expect(tofuApplyWithoutFreshApply(run(change([applied, stopped]), [applyAt(T0 + 3000)]))).toEqual([]);
  });

  it('are broken by an apply after a stop and a Retry with no Apply given since', () => {
    const violations = tofuApplyWithoutFreshApply(run(change([applied, stopped, retried]), [applyAt(T0 + 7000)]));
    expect(violations).toEqual([
      {
        invariant: 'tofu-apply-without-fresh-apply',
        detail: `tofu apply at ${iso(T0 + 7000)}: the latest Apply of ${OP} (U0CAROL at ${iso(T0 + 1000)}) came before its stop at ${iso(T0 + 5000)}`,
      },
    ]);
    // The Apply modelled as a spent approval of the apply step is no fresher.
    expect(tofuApplyWithoutFreshApply(run(change([stopped, retried], [approval(T0 + 1000, 'spent')]), [applyAt(T0 + 7000)]))).toHaveLength(
      1,
    );
  });

  it('hold when an approver approved the apply step again after the stop', () => {
    const op = change([applied, stopped, retried], [approval(T0 + 1000, 'spent'), approval(T0 + 6500)]);
    expect(tofuApplyWithoutFreshApply(run(op, [applyAt(T0 + 7000)]))).toEqual([]);
    // An approval given after the call authorises nothing before it.
    expect(tofuApplyWithoutFreshApply(run(op, [applyAt(T0 + 6400)]))).toHaveLength(1);
  });

  it('are broken by an apply with no Apply at all, or no Terraform change to belong to', () => {
    expect(tofuApplyWithoutFreshApply(run(change([]), [applyAt(T0 + 3000)]))).toEqual([
      {
        invariant: 'tofu-apply-without-fresh-apply',
        detail: `tofu apply at ${iso(T0 + 3000)}: ${OP} has no Apply or approval of its apply before it`,
      },
    ]);
    expect(tofuApplyWithoutFreshApply({ ...run(change([applied]), [applyAt(T0 - 1000, 'op-other')]), operations: [] })).toEqual([
      {
        invariant: 'tofu-apply-without-fresh-apply',
        detail: `tofu apply at ${iso(T0 - 1000)}: no Terraform change of production precedes it`,
      },
    ]);
  });

  it("judge only tofu apply on the run's cluster, and are part of every run's checks", () => {
    const elsewhere = { ...applyAt(T0 + 7000), cluster: 'staging' };
    const plan = { ...applyAt(T0 + 7000), argv: ['plan', '-out=tfplan'] };
    expect(tofuApplyWithoutFreshApply(run(change([applied, stopped, retried]), [elsewhere, plan]))).toEqual([]);
    const broken = run(change([applied, stopped, retried]), [applyAt(T0 + 7000)]);
    expect(checkInvariants(broken).filter((v) => v.invariant === 'tofu-apply-without-fresh-apply')).toHaveLength(1);
  });
});

describe('the chaos invariants of a control-plane replacement', () => {
  const victim = CPS[1]!;
  const steps = [
    { id: 'snapshot', kind: 'snapshot', status: 'done' },
    { id: 'remove-member', kind: 'remove-member', node: victim, nodeName: 'cp-12', status: 'done' },
    { id: 'delete-node', kind: 'delete-node', node: victim, nodeName: 'cp-12', status: 'done' },
    { id: 'replace-plan', kind: 'replace-plan', node: victim, nodeName: 'cp-12', status: 'done' },
    { id: 'tofu-apply', kind: 'tofu-apply', node: victim, nodeName: 'cp-12', status: 'done' },
  ];
  const approval = (step: string, at: number) => ({
    step,
    nonce: `n-${step}`,
    messageTs: '1.1',
    requestedAt: iso(T0),
    expiresAt: iso(T0 + 3_600_000),
    state: 'approved',
    by: 'U0CAROL',
    at: iso(at),
  });

  /** A replacement whose member removal and apply came at T0+2s and T0+4s, approved as `approvals` says. */
  function replacementRun(approvals: ReturnType<typeof approval>[]): RunEvidence {
    const run = completedRun();
    const op = { ...run.op!, id: 'op-rep1', kind: 'node-replace', steps, approvals, audit: [] } as unknown as RecordedOperation;
    const removal = { ...talosctl('etcd', CPS[0]!, T0 + 2000), argv: ['etcd', 'remove-member', 'b62345c92b27704a', '--nodes', CPS[0]!] };
    const apply: CallRecord = {
      ...removal,
      id: 9001,
      bin: 'tofu',
      argv: ['apply', '-input=false', '/plans/op-rep1/tfplan'],
      startedAt: T0 + 4000,
    };
    return { ...run, op, operations: [op], calls: [removal, apply], events: [] };
  }

  it('accept a member removal and an apply each approved before it', () => {
    const run = replacementRun([approval('remove-member', T0 + 1000), approval('tofu-apply', T0 + 3000)]);
    expect([...gatedCallWithoutFreshApproval(run), ...tofuApplyWithoutFreshApply(run)]).toEqual([]);
  });

  it('catch a member removal and an apply without their approvals', () => {
    const run = replacementRun([approval('remove-member', T0 + 2500)]);
    expect(gatedCallWithoutFreshApproval(run).map((v) => v.detail)).toEqual([
      `talosctl etcd remove-member b62345c92b27704a at ${iso(T0 + 2000)}: op-rep1 has no approval of remove-member before it`,
    ]);
    expect(tofuApplyWithoutFreshApply(run).map((v) => v.invariant)).toEqual(['tofu-apply-without-fresh-apply']);
  });

  it('catch another control plane taken down while the failed one is being replaced', () => {
    const run = completedRun();
    const events: SimEvent[] = [
      { at: T0, cluster: 'production', node: victim, kind: 'machine-failed' as SimEvent['kind'] },
      { at: T0 + 100, cluster: 'production', node: CPS[2]!, kind: 'reboot' },
    ];
    expect(controlPlanesDownTogether({ ...run, events }).map((v) => v.invariant)).toEqual(['control-planes-down-together']);
    const replaced: SimEvent[] = [
      { at: T0, cluster: 'production', node: victim, kind: 'machine-failed' as SimEvent['kind'] },
      { at: T0 + 50, cluster: 'production', node: victim, kind: 'vm-replaced' as SimEvent['kind'] },
      { at: T0 + 80, cluster: 'production', node: victim, kind: 'up' },
      { at: T0 + 100, cluster: 'production', node: CPS[2]!, kind: 'reboot' },
    ];
    expect(controlPlanesDownTogether({ ...run, events: replaced })).toEqual([]);
  });
});
