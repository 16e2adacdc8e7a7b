import { describe, expect, it } from 'vitest';
import type { CallRecord, SimEvent } from '../sim/index.ts';
import { drawFault, FAULT_NAMES, faultsFor, judgeStrike, moment, type FaultName, type FaultPlan, type StrikeEvidence } from './faults.ts';
import { mulberry32 } from './prng.ts';

const CPS = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
const UPGRADE = { nodes: CPS, approvals: CPS.length, upgrades: true };
/** A replacement of the third control plane: one approval, and only its new machine boots. */
const REPLACE = { nodes: [CPS[2]!], approvals: 1, upgrades: false };
const TIMEOUTS = { probeMs: 3000, nodeReadyMs: 4000, pollMs: 50 };
const T0 = Date.parse('2026-11-30T10:00:00Z');
/** The operation lives from T0 for a minute. */
const LIVE = { from: T0, to: T0 + 60_000 };

/** The first seeded plan of `fault` whose drawn parameters match `detail`. */
function planOf(fault: FaultName, detail?: RegExp): FaultPlan {
  for (let seed = 1; seed < 10_000; seed += 1) {
    const plan = drawFault(mulberry32(seed), UPGRADE, TIMEOUTS, fault);
    if (detail === undefined || detail.test(plan.detail)) return plan;
  }
  throw new Error(`no seed draws ${fault} with ${String(detail)}`);
}

/** A run in which the fault was in force from T0 + 1 s to T0 + 3 s, with nothing recorded unless given. */
function evidence(overrides: Partial<StrikeEvidence> = {}): StrikeEvidence {
  return { live: LIVE, injection: { from: T0 + 1000, to: T0 + 3000 }, calls: [], events: [], slackAnswers: [], ...overrides };
}

function call(argv: string[], at: number, result: Partial<CallRecord> = {}): CallRecord {
  return {
    id: at,
    bin: 'talosctl',
    argv: [...argv, '--nodes', CPS[0]!],
    cwd: '/',
    cluster: 'production',
    startedAt: at,
    endedAt: at + 10,
    exitCode: 0,
    ...result,
  };
}

function event(kind: SimEvent['kind'], node: string, at: number, versions: { fromVersion?: string; toVersion?: string } = {}): SimEvent {
  return { at, cluster: 'production', node, kind, ...versions };
}

const struck = (plan: FaultPlan, e: StrikeEvidence): boolean => judgeStrike(plan, e).struck;

describe('whether a fault struck', () => {
  it('says a fault whose moment never came, or that found no operation, did not strike', () => {
    const plan = planOf('bot-kill');

    expect(judgeStrike(plan, evidence({ injection: undefined }))).toEqual({
      struck: false,
      why: expect.stringMatching(/^it never took effect \(it waited for /),
    });
    expect(judgeStrike(plan, evidence({ live: undefined })).struck).toBe(false);
  });

  it('tells a moment from the life of the operation', () => {
    expect(moment(T0 - 500, LIVE)).toBe('0.5 s before the operation existed');
    expect(moment(T0 + 2100, LIVE)).toBe('2.1 s into the operation');
    expect(moment(T0 + 61_000, LIVE)).toBe('1.0 s after the operation ended');
  });

  it('counts a bot kill only while the operation is live', () => {
    const plan = planOf('bot-kill');

    expect(judgeStrike(plan, evidence())).toEqual({ struck: true, how: 'the bot was killed 1.0 s into the operation' });
    expect(judgeStrike(plan, evidence({ injection: { from: T0 + 61_000, to: T0 + 62_000 } }))).toEqual({
      struck: false,
      why: 'the bot was killed 1.0 s after the operation ended',
    });
  });

  it('counts a Redis outage that overlaps the operation', () => {
    const plan = planOf('redis-restart');

    expect(struck(plan, evidence({ injection: { from: T0 - 500, to: T0 + 200 } }))).toBe(true);
    expect(struck(plan, evidence({ injection: { from: T0 - 1500, to: T0 - 200 } }))).toBe(false);
  });

  it('counts a Slack fault only when Slack answered a call of the operation with it', () => {
    const limit = planOf('slack-429');
    const errors = planOf('slack-5xx', /status=503/);
    const answer = (status: number, at: number) => ({ method: 'chat.postMessage', status, at });

    expect(judgeStrike(limit, evidence({ slackAnswers: [answer(429, T0 + 1500), answer(200, T0 + 1600)] }))).toEqual({
      struck: true,
      how: 'Slack answered 1 call(s) with 429 (chat.postMessage), the first 1.5 s into the operation',
    });
    expect(struck(limit, evidence({ slackAnswers: [answer(200, T0 + 1500)] }))).toBe(false);
    expect(struck(limit, evidence({ injection: { from: T0 - 1000, to: T0 + 3000 }, slackAnswers: [answer(429, T0 - 500)] }))).toBe(false);
    expect(struck(errors, evidence({ slackAnswers: [answer(503, T0 + 1500)] }))).toBe(true);
    expect(struck(errors, evidence({ slackAnswers: [answer(500, T0 + 1500)] }))).toBe(false);
  });

  it('counts a talosctl hang only when a call of the operation hung, or the upgrade really stalled', () => {
    const probe = planOf('talosctl-hang', /path="etcd status"/);
    const upgrade = planOf('talosctl-hang', /stalls/);
    const node = /of (\S+) stalls/.exec(upgrade.detail)![1]!;

    expect(struck(probe, evidence({ calls: [call(['etcd', 'status'], T0 + 1500, { hung: 'fault: etcd status', exitCode: null })] }))).toBe(
      true,
    );
    expect(struck(probe, evidence({ calls: [call(['etcd', 'status'], T0 + 1500)] }))).toBe(false);
    expect(struck(probe, evidence({ calls: [call(['version'], T0 + 1500, { hung: 'fault: version' })] }))).toBe(false);
    expect(struck(upgrade, evidence({ events: [event('upgrade-start', node, T0 + 1500)] }))).toBe(true);
    expect(struck(upgrade, evidence({ events: [event('upgrade-start', node, T0 + 1500), event('reboot', node, T0 + 1600)] }))).toBe(false);
    expect(struck(upgrade, evidence())).toBe(false);
  });

  it('counts a talosctl failure only when a call failed while the fault was in force', () => {
    const plan = planOf('talosctl-fail', /path="health"/);

    expect(judgeStrike(plan, evidence({ calls: [call(['health'], T0 + 2000, { exitCode: 1 })] }))).toEqual({
      struck: true,
      how: 'talosctl health failed 1 time(s), the first 2.0 s into the operation',
    });
    expect(struck(plan, evidence({ calls: [call(['health'], T0 + 4000, { exitCode: 1 })] }))).toBe(false);
    expect(struck(plan, evidence({ calls: [call(['health'], T0 + 2000)] }))).toBe(false);
  });

  it('counts a NotReady node that came back from its upgrade NotReady, or was NotReady for at least one poll', () => {
    const stays = planOf('node-not-ready', /stays NotReady/);
    const staysNode = stays.detail.split(' ')[0]!;
    const transient = planOf('node-not-ready', /NotReady for \d+ms/);

    expect(struck(stays, evidence({ events: [event('upgrade-start', staysNode, T0 + 1500), event('up', staysNode, T0 + 2000)] }))).toBe(
      true,
    );
    expect(struck(stays, evidence({ events: [event('up', staysNode, T0 + 2000)] }))).toBe(false);
    expect(struck(transient, evidence())).toBe(true);
    expect(struck(transient, evidence({ injection: { from: T0 + 1000, to: T0 + 1010 } }))).toBe(false);
    expect(struck(transient, evidence({ injection: { from: T0 + 59_990, to: T0 + 62_000 } }))).toBe(false);
  });

  it('counts a silent revert only when the node came back on its old version', () => {
    const plan = planOf('silent-revert');
    const node = plan.detail.split(' ')[0]!;
    const start = event('upgrade-start', node, T0 + 1500, { fromVersion: 'v1.11.5', toVersion: 'v1.12.11' });

    expect(judgeStrike(plan, evidence({ events: [start, event('up', node, T0 + 2000, { toVersion: 'v1.11.5' })] }))).toEqual({
      struck: true,
      how: `${node} came back on v1.11.5 instead of v1.12.11, 2.0 s into the operation`,
    });
    expect(struck(plan, evidence({ events: [start, event('up', node, T0 + 2000, { toVersion: 'v1.12.11' })] }))).toBe(false);
    expect(struck(plan, evidence({ events: [start] }))).toBe(false);
  });

  it('counts a second bot that was running before the operation ended', () => {
    const plan = planOf('second-bot');

    expect(struck(plan, evidence())).toBe(true);
    expect(struck(plan, evidence({ injection: { from: T0 + 61_000, to: T0 + 70_000 } }))).toBe(false);
  });

  it("counts a Slack outage only when the bot's attempts to reconnect failed while the operation was live", () => {
    const plan = planOf('slack-unreachable');
    const open = (at: number, status: number) => ({ method: 'apps.connections.open', status, at });

    expect(judgeStrike(plan, evidence({ slackAnswers: [open(T0 + 1500, 503), open(T0 + 2500, 0)] }))).toEqual({
      struck: true,
      how: "Slack's Socket Mode was away for 2.0 s; 2 attempt(s) to reconnect failed, the first 1.5 s into the operation",
    });
    expect(struck(plan, evidence({ slackAnswers: [open(T0 + 1500, 200)] }))).toBe(false);
    expect(struck(plan, evidence({ slackAnswers: [{ method: 'chat.postMessage', status: 503, at: T0 + 1500 }] }))).toBe(false);
  });

  it("draws Slack outages clearly longer than the bot's old Socket Mode retry budget (about 11 s)", () => {
    for (let seed = 1; seed <= 50; seed += 1) {
      const plan = drawFault(mulberry32(seed), UPGRADE, TIMEOUTS, 'slack-unreachable');
      const forMs = Number(/for=(\d+)ms/.exec(plan.detail)?.[1]);
      expect(forMs).toBeGreaterThanOrEqual(15_000);
    }
  });
});

describe('the moment a fault strikes', () => {
  it('is a point every run of its shape reaches, followed by a talosctl call to hold or a button to wait at', () => {
    const problems: string[] = [];
    for (const shape of [UPGRADE, REPLACE]) {
      for (let seed = 1; seed <= 400; seed += 1) {
        const { fault, trigger } = drawFault(mulberry32(seed), shape, TIMEOUTS);
        const where = `seed ${seed}, ${shape.upgrades ? 'upgrade' : 'replacement'}: ${fault} ${JSON.stringify(trigger)}`;
        if (!faultsFor(shape).includes(fault)) problems.push(`${where}: a fault the run cannot meet`);
        if (trigger.call < 1) problems.push(`${where}: no call to hold`);
        // A point followed by one call of a path holds the first: the checks after the last node run each probe only once.
        if (trigger.path !== undefined && trigger.call !== 1) problems.push(`${where}: a later call of the path may never come`);
        if (!shape.upgrades && trigger.path === 'upgrade') problems.push(`${where}: a replacement sends no upgrade`);
        // People who hold their clicks wait at the next approval: there must be one.
        const last = trigger.hold === 'clicks' ? shape.approvals - 1 : shape.approvals;
        if (trigger.at === 'approval' && (trigger.n < 1 || trigger.n > last)) problems.push(`${where}: an approval the run never reaches`);
        if ((trigger.at === 'upgrade-start' || trigger.at === 'node-up') && !shape.nodes.includes(trigger.node))
          problems.push(`${where}: a node the run never boots`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('is never drawn for a fault that acts on an upgrade reboot in a run that upgrades no node', () => {
    expect(FAULT_NAMES.filter((f) => !faultsFor(REPLACE).includes(f))).toEqual(['node-not-ready', 'silent-revert']);
    expect(() => drawFault(mulberry32(1), REPLACE, TIMEOUTS, 'silent-revert')).toThrow(/choose an upgrade run/);
  });
});
