import { describe, expect, it } from 'vitest';
import type { CallRecord, SimEvent } from '../sim/index.ts';
import { mutatingCallWithoutLock, type RecordedOperation, type RunEvidence } from './invariants.ts';

const T0 = Date.parse('2026-11-30T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString();

let ids = 0;
function call(bin: CallRecord['bin'], argv: string[], at: number, cluster = 'production'): CallRecord {
  ids += 1;
  return { id: ids, bin, argv, cwd: '/', cluster, startedAt: at, endedAt: at + 50, exitCode: 0 };
}

const talosctl = (words: string[], node: string, at: number): CallRecord =>
  call('talosctl', [...words, '--talosconfig', '/creds/production', '--nodes', node], at);

/** A run whose operation started at T0 + 1 s and, unless told, is still failed (holding its cluster). */
function run(fields: Partial<RunEvidence> = {}, op: Partial<RecordedOperation> = {}): RunEvidence {
  const recorded = { state: 'failed', startedAt: iso(T0 + 1000), ...op } as RecordedOperation;
  return {
    cluster: 'production',
    controlPlanes: ['10.0.30.11'],
    target: 'v1.12.11',
    events: [],
    calls: [],
    op: recorded,
    operations: [recorded],
    inventory: { environment: 'production', maintenanceWindows: [], allowOutsideWindows: false },
    ended: true,
    thread: [],
    versionsAfter: {},
    approvers: [],
    canary: 'CANARY',
    texts: [],
    ...fields,
  };
}

describe('no mutating call while the operation does not hold its cluster', () => {
  it('lets reads through at any time, and changes while the cluster is held', () => {
    const calls = [
      talosctl(['version'], '10.0.30.11', T0),
      talosctl(['upgrade', '--image', 'x'], '10.0.30.11', T0 + 2000),
      talosctl(['etcd', 'snapshot', '/tmp/s'], '10.0.30.11', T0 + 9000),
      call('tofu', ['plan'], T0 + 9000),
    ];
    expect(mutatingCallWithoutLock(run({ calls, lockLostAt: T0 + 5000 }))).toEqual([]);
  });

  it('catches an upgrade, a reboot, an etcd leave and a tofu apply sent after Redis lost the lock', () => {
    const calls = [
      talosctl(['upgrade', '--image', 'x'], '10.0.30.12', T0 + 6000),
      talosctl(['reboot'], '10.0.30.13', T0 + 6000),
      talosctl(['etcd', 'leave'], '10.0.30.13', T0 + 6000),
      call('tofu', ['apply', 'plan.bin'], T0 + 6000),
      // Another cluster's lock is not this operation's business.
      call('talosctl', ['reset'], T0 + 6000, 'staging'),
    ];
    const violations = mutatingCallWithoutLock(run({ calls, lockLostAt: T0 + 5000 }, { state: undefined as never }));
    expect(violations.map((v) => v.detail)).toEqual([
      `talosctl upgrade on 10.0.30.12 at ${iso(T0 + 6000)}, after Redis lost the cluster lock`,
      `talosctl reboot on 10.0.30.13 at ${iso(T0 + 6000)}, after Redis lost the cluster lock`,
      `talosctl etcd leave on 10.0.30.13 at ${iso(T0 + 6000)}, after Redis lost the cluster lock`,
      `tofu apply on production at ${iso(T0 + 6000)}, after Redis lost the cluster lock`,
    ]);
    expect(violations.every((v) => v.invariant === 'mutating-call-without-lock')).toBe(true);
  });

  it('judges a run whose record Redis lost by the moment of the loss alone', () => {
    const calls = [talosctl(['upgrade', '--image', 'x'], '10.0.30.11', T0 + 4000), talosctl(['rollback'], '10.0.30.11', T0 + 7000)];
    const violations = mutatingCallWithoutLock(run({ calls, lockLostAt: T0 + 5000, op: undefined, operations: [] }));
    expect(violations.map((v) => v.detail)).toEqual([
      `talosctl rollback on 10.0.30.11 at ${iso(T0 + 7000)}, after Redis lost the cluster lock`,
    ]);
  });

  it('catches a change before Start took the cluster, and after a completion gave it back', () => {
    const calls = [
      talosctl(['reset', '--graceful'], '10.0.30.11', T0),
      talosctl(['upgrade-k8s', '--to', '1.34.1'], '10.0.30.11', T0 + 9000),
    ];
    const events: SimEvent[] = [{ at: T0 + 9500, cluster: 'production', node: '10.0.30.14', kind: 'node-deleted' }];
    const violations = mutatingCallWithoutLock(run({ calls, events }, { state: 'completed', endedAt: iso(T0 + 8000) }));
    expect(violations.map((v) => v.detail)).toEqual([
      `talosctl reset on 10.0.30.11 at ${iso(T0)}, before Start took the cluster`,
      `talosctl upgrade-k8s on 10.0.30.11 at ${iso(T0 + 9000)}, after the operation ended completed and gave the cluster back`,
      `Node 10.0.30.14 deleted at ${iso(T0 + 9500)}, after the operation ended completed and gave the cluster back`,
    ]);
  });
});
