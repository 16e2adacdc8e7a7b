import { describe, expect, it } from 'vitest';
import { ACTION_PERMISSIONS, type Permission } from '../../../handlers/action-permissions.ts';
import { presentationOf } from '../../../jobs/playbooks/index.ts';
import { ACTION } from '../../../src/chat/buttons.ts';
import { etcdLine, leftBehind, peopleLine, recommend, whoMayClick } from '../../../src/chat/stop-advice.ts';
import { failureMessage } from '../../../src/chat/stop-messages.ts';
import type { ClusterStanding, EtcdStanding } from '../../../src/chat/stop-state.ts';
import { STOP_BUTTONS_WHO } from '../../../src/chat/who-may-click.ts';
import type { LifecyclePolicy } from '../../../jobs/engine/lifecycle/deps.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { blockKitProblems } from '../../support/block-kit-limits.ts';
import { anOperation } from '../../support/builders.ts';

const CP = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
const STANDING: ClusterStanding = {
  nodes: [
    { node: CP[0]!, name: 'talos-prd-cp-1', version: 'v1.12.1', ready: true, cordoned: false },
    { node: CP[1]!, name: 'talos-prd-cp-2', version: 'v1.11.6', ready: false, cordoned: true },
    { node: CP[2]!, name: 'talos-prd-cp-3', version: 'v1.11.6', ready: true, cordoned: false },
  ],
};

function nodeStep(i: number, overrides: Partial<Step> = {}): Step {
  return {
    id: `cp-${i + 1}`,
    kind: 'upgrade-control-plane',
    node: CP[i],
    nodeName: `talos-prd-cp-${i + 1}`,
    status: 'pending',
    ...overrides,
  };
}

/** An upgrade stopped at its second control plane, whose upgrade was sent: Retry, Rollback and Cancel on offer. */
function stopped(overrides: Partial<Operation> = {}): Operation {
  return anOperation({
    state: 'failed',
    startedBy: 'U0ALICE',
    steps: [
      nodeStep(0, { status: 'done', issuedAt: '2026-11-29T22:10:00.000Z' }),
      nodeStep(1, { status: 'failed', issuedAt: '2026-11-29T22:20:00.000Z', startedAt: '2026-11-29T22:19:00.000Z' }),
      nodeStep(2),
    ],
    approvals: [
      {
        step: 'cp-1',
        nonce: 'a1',
        messageTs: '1.1',
        requestedAt: '2026-11-29T22:05:00.000Z',
        expiresAt: '2026-11-29T23:05:00.000Z',
        state: 'spent',
        by: 'U0DAVE',
        at: '2026-11-29T22:06:00.000Z',
      },
      {
        step: 'cp-2',
        nonce: 'a2',
        messageTs: '1.2',
        requestedAt: '2026-11-29T22:15:00.000Z',
        expiresAt: '2026-11-29T23:15:00.000Z',
        state: 'spent',
        by: 'U0CAROL',
        at: '2026-11-29T22:18:00.000Z',
      },
    ],
    retry: { step: 'cp-2', nonce: 'r3try', state: 'offered', resume: 'observe' },
    failure: { step: 'cp-2', node: CP[1]!, nonce: 'f41l', rollback: 'offered' },
    stopNonce: 'st0p',
    ...overrides,
  });
}

const TALOS = presentationOf('talos-upgrade');

describe('what a stop recommends', () => {
  it('an upgrade in flight: Retry the node by name, which watches it and never re-sends the upgrade while it may be in flight', () => {
    const op = stopped();

    const advice = recommend(op, op.steps[1], STANDING, TALOS);

    expect(advice).toEqual({
      action: 'retry',
      label: 'Retry talos-prd-cp-2',
      why: 'it watches talos-prd-cp-2 again and never re-sends the upgrade while it may be in flight; it sends it again only if talos-prd-cp-2 shows it never arrived (not rebooted, not cordoned)',
    });
  });

  it('a node already on the target: Retry runs only the checks after it', () => {
    const op = stopped();
    const onTarget: ClusterStanding = { nodes: STANDING.nodes.map((n) => (n.node === CP[1] ? { ...n, version: 'v1.12.1' } : n)) };

    expect(recommend(op, op.steps[1], onTarget, TALOS)?.why).toBe(
      'talos-prd-cp-2 already runs v1.12.1: it looks at talos-prd-cp-2 again and runs only the checks after it; it never re-sends the upgrade',
    );
  });

  it('a failed check before anything was sent: Retry runs the checks again and sends nothing unless they pass', () => {
    const op = stopped({
      steps: [nodeStep(0, { status: 'failed', startedAt: '2026-11-29T22:09:00.000Z' }), nodeStep(1), nodeStep(2)],
      retry: { step: 'cp-1', nonce: 'r3try', state: 'offered' },
      failure: undefined,
    });

    expect(recommend(op, op.steps[0], STANDING, TALOS)).toEqual({
      action: 'retry',
      label: 'Retry talos-prd-cp-1',
      why: 'nothing was sent to talos-prd-cp-1: it runs the checks before talos-prd-cp-1 again, and sends nothing unless they pass',
    });
  });

  it("Talos fell back on its own: the approver's explicit Retry, named for the node, with the playbook's reason", () => {
    const does = 'only an approver\'s explicit "Retry the upgrade of this node" sends talosctl upgrade to 10.0.30.12 again';
    const op = stopped({
      retry: { step: 'cp-2', nonce: 'r3try', state: 'offered', resume: 'reissue', explicit: 'Retry the upgrade of this node', does },
      failure: undefined,
    });

    expect(recommend(op, op.steps[1], STANDING, TALOS)).toEqual({
      action: 'retry',
      label: 'Retry the upgrade of talos-prd-cp-2',
      why: does,
    });
  });

  it('without a Retry, the Rollback of the node; without either, Cancel', () => {
    const rollbackOnly = stopped({ retry: undefined });
    const neither = stopped({ retry: undefined, failure: undefined });

    expect(recommend(rollbackOnly, rollbackOnly.steps[1], STANDING, TALOS)).toMatchObject({
      action: 'rollback',
      label: 'Roll back talos-prd-cp-2',
    });
    expect(recommend(neither, neither.steps[1], STANDING, TALOS)).toMatchObject({ action: 'cancel', label: 'Cancel' });
    expect(recommend(neither, neither.steps[1], STANDING, TALOS, false)).toBeUndefined();
  });
});

describe('etcd as a stop found it', () => {
  it.each<[EtcdStanding, string]>([
    [{ read: true, members: 3, healthy: CP, controlPlanes: CP }, '3 of 3 members healthy · quorum 2 · survives 1 more failure'],
    [
      { read: true, members: 3, healthy: [CP[0]!, CP[2]!], controlPlanes: CP },
      '2 of 3 members healthy (talos-prd-cp-2 is not) · quorum 2 · survives no further failure',
    ],
    [
      { read: true, members: 3, healthy: [CP[0]!], controlPlanes: CP },
      '1 of 3 members healthy (talos-prd-cp-2, talos-prd-cp-3 are not) · quorum 2 · quorum is lost: etcd takes no writes',
    ],
    [{ read: false, why: 'etcd status: no answer within 5 s' }, 'not read (etcd status: no answer within 5 s)'],
  ])('%o reads as %s', (etcd, line) => {
    expect(etcdLine(stopped(), STANDING, etcd)).toBe(line);
  });

  it('leads the stop with it, right after the nodes, and in the notification', () => {
    const op = stopped();
    const standing: ClusterStanding = { ...STANDING, etcd: { read: true, members: 3, healthy: [CP[0]!, CP[2]!], controlPlanes: CP } };

    const message = failureMessage(op, op.steps[1], 'talos-prd-cp-2 was not Ready in time', [], TALOS, undefined, true, standing);

    const ids = message.blocks!.map((b) => b['block_id']);
    expect(ids.indexOf('stop-etcd')).toBeLessThan(ids.indexOf('stop-recommended'));
    expect(JSON.stringify(message.blocks![ids.indexOf('stop-etcd')])).toContain(
      '*etcd*: 2 of 3 members healthy (talos-prd-cp-2 is not) · quorum 2 · survives no further failure',
    );
    expect(message.text).toContain('etcd: 2 of 3 members healthy (talos-prd-cp-2 is not) · quorum 2 · survives no further failure.');
    expect(blockKitProblems(message)).toEqual([]);
  });
});

describe('who a stop is for and who may click', () => {
  it('mentions the operator who started it and the approver who approved last', () => {
    expect(peopleLine(stopped())).toMatch(/^<@U0ALICE> started it; <@U0CAROL> approved last, <!date\^\d+\^/);
    expect(peopleLine(stopped({ approvals: [] }))).toBe('<@U0ALICE> started it');
    expect(peopleLine(stopped({ approvals: [], startedBy: 'U0BOB' }))).toBe('<@U0BOB> started it; <@U0ALICE> asked for it');
  });

  it('says who may click each button, as the handlers enforce it', () => {
    const explicit = stopped({ retry: { step: 'cp-2', nonce: 'r', state: 'offered', explicit: 'Retry the upgrade of this node' } });
    const policy = {} as LifecyclePolicy;
    const who = (action: string, op: Operation): unknown => {
      const permission = ACTION_PERMISSIONS[action] as Permission;
      return typeof permission.who === 'function' ? permission.who(op, policy) : permission.who;
    };

    expect(whoMayClick(stopped(), { retry: true, rollback: true, cancel: true })).toBe(
      'Who may click: Retry: operators or approvers · Roll back: operators (an approver then approves it) · Cancel: operators or approvers.',
    );
    expect(whoMayClick(explicit, { retry: true, rollback: false, cancel: true })).toBe(
      'Who may click: Retry: approvers · Cancel: operators or approvers.',
    );
    for (const op of [stopped(), explicit]) {
      expect(who(ACTION.retry, op)).toBe(STOP_BUTTONS_WHO.retry(op));
      expect(who(ACTION.rollback, op)).toBe(STOP_BUTTONS_WHO.rollback);
      expect(who(ACTION.cancelPlan, op)).toBe(STOP_BUTTONS_WHO.cancel);
    }
  });
});

describe('what Cancel leaves', () => {
  it('names each version and the nodes on it, and the command that continues later', () => {
    const op = stopped();

    const message = failureMessage(op, op.steps[1], 'x', [], TALOS, undefined, true, STANDING, {
      continueWith: '/talos upgrade talos v1.12.1 production',
    });

    expect(leftBehind(op, STANDING)).toBe('talos-prd-cp-1 on v1.12.1; talos-prd-cp-2, talos-prd-cp-3 on v1.11.6');
    expect(JSON.stringify(message.blocks)).toContain(
      'the nodes stay as they are (talos-prd-cp-1 on v1.12.1; talos-prd-cp-2, talos-prd-cp-3 on v1.11.6), nothing is undone. `/talos cancel op-1a2b3c4d5e` does the same. To continue later: `/talos upgrade talos v1.12.1 production`.',
    );
  });
});
