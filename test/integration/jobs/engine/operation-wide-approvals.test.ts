import { beforeEach, describe, expect, it } from 'vitest';
import { aTestPlaybook } from '../../../support/test-playbook.ts';
import type { Playbook, WalkStart } from '../../../../jobs/engine/playbook.ts';
import { walkOperation } from '../../../../jobs/engine/walk.ts';
import { PLAYBOOKS } from '../../../../jobs/playbooks/index.ts';
import type { ClusterSession } from '../../../../src/cluster/cluster-session.ts';
import type { Approval, Operation, Step } from '../../../../src/ops/operation.ts';
import type { Talosctl } from '../../../../src/talos/talosctl.ts';
import { engineFixture, inventory, type EngineFixture } from '../../../support/engine-fixture.ts';
import { useRedisFixture } from '../../../support/redis-fixture.ts';

// `approvalScope: operation`: one person's decision covers the later gated steps, for as long as the
// approval age bound allows from that decision, never across a closed window or a stop, and never a
// step the playbook keeps for a person to see (a saved plan's `tofu apply`).

const redis = useRedisFixture();
let f: EngineFixture;
const MIN = 60_000;

beforeEach(() => {
  f = engineFixture(redis, { inventory: inventory('    approvalScope: operation\n') });
});

const step = (id: string): Step => ({ id, kind: 'k8s-apply', status: 'pending' });

/** Three gated steps; each takes `minutes` of the test's clock. */
function playbook(ran: string[], minutes: number, overrides: Partial<Playbook> = {}): Playbook {
  return aTestPlaybook({
    needsApproval: () => true,
    approvalMessage: (_ctx, op, _approval, s) => Promise.resolve({ text: `Approve ${s.id}? (${op.id})` }),
    runStep: (_ctx, _op, s) => {
      ran.push(s.id);
      f.clock.now = new Date(f.clock.now.getTime() + minutes * MIN);
      return Promise.resolve({ event: `ran ${s.id}`, detail: 'ok' });
    },
    ...overrides,
  });
}

function context(): WalkStart {
  const cluster = f.deps.inventory.clusters[0]!;
  return { deps: f.deps, cluster, session: {} as ClusterSession, talosctl: {} as Talosctl, log: f.deps.logger };
}

/** The first step approved by a person under the operation's scope, now. */
function decision(): Approval {
  const at = f.clock.now.toISOString();
  return {
    step: 'g1',
    nonce: 'human',
    messageTs: '1700000000.000009',
    requestedAt: at,
    expiresAt: at,
    state: 'approved',
    by: 'U0CAROL',
    at,
    scope: 'operation',
  };
}

async function started(fields: Partial<Operation>): Promise<Operation> {
  const op = await f.operation({
    rootTs: '1700000000.000001',
    steps: [step('g1'), step('g2'), step('g3')],
    approvals: [decision()],
    ...fields,
  });
  await f.deps.lock.acquire(op.cluster, op.id);
  return op;
}

const stored = async (id: string): Promise<Operation> => (await f.deps.store.get(id))!;

describe('an operation-wide approval', () => {
  it('covers a later step by the age of the decision, never of the cover before it, and asks again once that is too old', async () => {
    // Arrange: the bound is 30 min; each step takes 20 min, so g2 starts 20 min after the decision and g3 40 min after it.
    const ran: string[] = [];
    const op = await started({});

    // Act
    await walkOperation(context(), op.id, playbook(ran, 20));

    // Assert: g2 went on the decision, g3 asks a person (a cover renewed at g2 would have let it go).
    expect(ran).toEqual(['g1', 'g2']);
    const after = await stored(op.id);
    expect(after.state).toBe('awaiting-approval');
    expect(after.approvals.map((a) => [a.step, a.state, a.coveredBy])).toEqual([
      ['g1', 'approved', undefined],
      ['g2', 'approved', 'human'],
      ['g3', 'pending', undefined],
    ]);
    expect(after.approvals[2]?.scope).toBe('operation');
    const tooOld = after.audit.find((e) => e.event === 'operation-wide approval too old for g3');
    expect(tooOld?.detail).toBe(
      'given by <@U0CAROL> at 2026-12-01T10:00:00.000Z for g1, more than 30 min ago (APPROVAL_MAX_AGE_MINUTES); an approver is asked again',
    );
    expect(f.chat.thread(op.rootTs!).some((t) => t.includes('Approve g3?'))).toBe(true);
  });

  it('does not cover a step the playbook keeps for a person, and that step’s approval covers no other', async () => {
    // Arrange: g2 is a saved plan's apply.
    const ran: string[] = [];
    const op = await started({});
    const book = playbook(ran, 1, { neverCovered: (s) => s.id === 'g2' });

    // Act
    await walkOperation(context(), op.id, book);

    // Assert: g1 ran on its own approval; g2 asks, for itself alone.
    expect(ran).toEqual(['g1']);
    const after = await stored(op.id);
    expect(after.approvals.map((a) => [a.step, a.state, a.scope])).toEqual([
      ['g1', 'approved', 'operation'],
      ['g2', 'pending', undefined],
    ]);
  });

  it('is spent when the maintenance window closes before the next step: that step asks again once it opens', async () => {
    // Arrange: a window 09:00-11:00 UTC each day and no age bound to speak of; g1 runs past its end.
    f = engineFixture(redis, {
      inventory: inventory(
        "    approvalScope: operation\n    maintenanceWindows: [{ start: '0 9 * * *', durationMinutes: 120, timeZone: 'UTC' }]\n",
      ),
    });
    f.deps.timeouts.approvalMaxAgeMs = 48 * 60 * MIN;
    const ran: string[] = [];
    const op = await started({});

    // Act: g1 ends at 11:30, outside the window; the next morning the window opens.
    await walkOperation(context(), op.id, playbook(ran, 90));
    const waiting = await stored(op.id);
    f.clock.now = new Date('2026-12-02T09:00:05Z');
    await walkOperation(context(), op.id, playbook(ran, 1));

    // Assert
    expect(waiting.state).toBe('waiting-window');
    expect(waiting.approvals.map((a) => a.state)).toEqual(['spent']);
    expect(waiting.audit.find((e) => e.event.startsWith('waiting for the maintenance window'))?.detail).toContain(
      'the operation-wide approval is spent: an approver is asked again',
    );
    expect(ran).toEqual(['g1']);
    const after = await stored(op.id);
    expect(after.state).toBe('awaiting-approval');
    expect(after.approvals.map((a) => [a.step, a.state])).toEqual([
      ['g1', 'spent'],
      ['g2', 'pending'],
    ]);
  });

  it('covers nothing once someone asked the operation to stop and it goes on only to finish what must finish', async () => {
    // Arrange: a stop was asked for, and the playbook holds it (a node mid-reboot).
    const ran: string[] = [];
    const op = await started({ cancelRequestedBy: 'U0ALICE' });
    const book = playbook(ran, 1, { cancelRefusal: () => 'a node is rebooting' });

    // Act
    await walkOperation(context(), op.id, book);

    // Assert
    expect(ran).toEqual(['g1']);
    expect((await stored(op.id)).approvals.map((a) => [a.step, a.state, a.coveredBy])).toEqual([
      ['g1', 'approved', undefined],
      ['g2', 'pending', undefined],
    ]);
  });
});

describe('the playbooks', () => {
  it('keep every `tofu apply` for a person who sees its plan', () => {
    const apply: Step = { id: 'apply', kind: 'tofu-apply', status: 'pending' };
    const applying = Object.entries(PLAYBOOKS).filter(([, p]) => (p as Playbook).needsApproval(apply));
    expect(applying.map(([kind]) => kind).sort()).toEqual(['node-replace', 'terraform-apply']);
    for (const [, p] of applying) expect((p as Playbook).neverCovered?.(apply)).toBe(true);
  });
});
