import { describe, expect, it } from 'vitest';
import type { Operation } from '../../../src/ops/operation.ts';
import { createOperationStore } from '../../../src/ops/operation-store.ts';
import { terraformData } from '../../../jobs/playbooks/terraform-apply/data.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';
import { resendingOnce } from '../../support/resending-redis.ts';
import { anOperation } from '../../support/builders.ts';

const redis = useRedisFixture();

/** A planned Talos upgrade, as the preflight stores it. */
function operation(overrides: Partial<Operation> = {}): Operation {
  return anOperation({
    steps: [{ id: 's1', kind: 'upgrade-worker', node: '10.0.30.21', status: 'pending' }],
    ...overrides,
  });
}

describe('operation store on a real Redis', () => {
  it('stores an operation and reads it back as it was', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    const op = operation();

    // Act
    await store.create(op);
    const read = await store.get(op.id);

    // Assert
    expect(read).toEqual(op);
  });

  it('reads an operation an earlier version stored with its playbook fields at the top, those fields moved into data', async () => {
    // Arrange
    const client = redis.client();
    const store = createOperationStore(client);
    const terraform = {
      commit: 'c0ffee',
      dirty: false,
      planSha256: 'ab12',
      summary: '1 to add',
      changes: [{ address: 'proxmox_vm.w2', action: 'create' }],
      listing: ['+ proxmox_vm.w2'],
      adds: ['talos-w-2'],
    };
    const earlier = { ...operation({ kind: 'terraform-apply', state: 'failed' }), terraform, replannedAs: 'op-0next00000' };
    const rollback = { ...operation({ id: 'op-0rollback0', kind: 'node-rollback' }), parent: { op: 'op-1a2b3c4d5e', step: 's1' } };
    await client.set('talos:op:op-1a2b3c4d5e', JSON.stringify(earlier));
    await client.set('talos:op:op-0rollback0', JSON.stringify(rollback));

    // Act
    const read = await store.get('op-1a2b3c4d5e');
    const child = await store.get('op-0rollback0');

    // Assert
    expect(read).toEqual({ ...operation({ kind: 'terraform-apply', state: 'failed' }), data: { terraform, replannedAs: 'op-0next00000' } });
    expect(read).not.toHaveProperty('terraform');
    expect(child?.data).toEqual({ parent: { op: 'op-1a2b3c4d5e', step: 's1' } });
    expect(terraformData(read!).terraform?.commit).toBe('c0ffee');
  });

  it("reads a Terraform change an earlier version stored with its apply step's id `apply` as `tofu-apply`, wherever the step is named", async () => {
    // Arrange: stopped before its apply with a Retry offered; its Apply's approval and a window wait name the step.
    const client = redis.client();
    const store = createOperationStore(client);
    const approval = {
      step: 'apply',
      nonce: 'n1',
      messageTs: '1.1',
      requestedAt: '2026-12-01T09:00:00Z',
      expiresAt: '2026-12-01T10:00:00Z',
      state: 'spent' as const,
      by: 'U0CAROL',
      at: '2026-12-01T09:10:00Z',
    };
    const steps = (apply: string): Operation['steps'] => [
      { id: 'snapshot', kind: 'snapshot', status: 'done' },
      { id: apply, kind: 'tofu-apply', status: 'pending' },
      { id: 'gate', kind: 'apply-gate', status: 'pending' },
    ];
    const earlier = operation({
      id: 'op-0tf000000a',
      kind: 'terraform-apply',
      state: 'failed',
      steps: steps('apply'),
      approvals: [approval],
      retry: { step: 'apply', nonce: 'r1', state: 'offered' },
      windowWait: { step: 'apply', nonce: 'w1', since: '2026-12-01T09:20:00Z' },
    });
    const k8s = operation({ id: 'op-0k8s00000a', kind: 'k8s-upgrade', steps: [{ id: 'apply', kind: 'k8s-apply', status: 'pending' }] });
    await client.set(`talos:op:${earlier.id}`, JSON.stringify(earlier));
    await client.set(`talos:op:${k8s.id}`, JSON.stringify(k8s));

    // Act
    const read = await store.get(earlier.id);
    const kubernetes = await store.get(k8s.id);

    // Assert
    expect(read).toEqual({
      ...earlier,
      steps: steps('tofu-apply'),
      approvals: [{ ...approval, step: 'tofu-apply' }],
      retry: { step: 'tofu-apply', nonce: 'r1', state: 'offered' },
      windowWait: { step: 'tofu-apply', nonce: 'w1', since: '2026-12-01T09:20:00Z' },
    });
    expect(kubernetes).toEqual(k8s);
  });

  it('keeps the data of an operation stored in the current shape as it is', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    const op = operation({ kind: 'node-rollback', data: { parent: { op: 'op-0parent000', step: 's2' } } });

    // Act
    await store.create(op);

    // Assert
    expect(await store.get(op.id)).toEqual(op);
  });

  it('answers undefined for an operation that does not exist', async () => {
    // Arrange
    const store = createOperationStore(redis.client());

    // Act
    const read = await store.get('op-missing0');

    // Assert
    expect(read).toBeUndefined();
  });

  it('never overwrites an existing operation on create', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation({ state: 'running' }));

    // Act
    await store.create(operation({ state: 'planned', requestedBy: 'U0MALLORY' }));

    // Assert
    expect(await store.get('op-1a2b3c4d5e')).toMatchObject({ state: 'running', requestedBy: 'U0ALICE' });
  });

  it('updates an operation, bumping its revision, and tells the observer', async () => {
    // Arrange
    const changes: [Operation, Operation][] = [];
    const store = createOperationStore(redis.client(), { onChange: (before, after) => changes.push([before, after]) });
    await store.create(operation());

    // Act
    const { op, changed } = await store.update('op-1a2b3c4d5e', (o) => ({ ...o, state: 'running', startedBy: 'U0BOB' }));

    // Assert
    expect(changed).toBe(true);
    expect(op).toMatchObject({ state: 'running', startedBy: 'U0BOB', revision: 2 });
    expect(await store.get('op-1a2b3c4d5e')).toEqual(op);
    expect(changes.map(([before, after]) => [before.state, after.state, after.revision])).toEqual([['planned', 'running', 2]]);
  });

  it('leaves the operation unchanged when the mutation returns undefined', async () => {
    // Arrange
    const changes: unknown[] = [];
    const store = createOperationStore(redis.client(), { onChange: (...args) => changes.push(args) });
    await store.create(operation());

    // Act
    const { op, changed } = await store.update('op-1a2b3c4d5e', () => undefined);

    // Assert
    expect(changed).toBe(false);
    expect(op).toEqual(operation());
    expect(await store.get('op-1a2b3c4d5e')).toEqual(operation());
    expect(changes).toEqual([]);
  });

  it('gives the mutation a copy, so a refused change leaves no trace', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation());

    // Act
    const { op } = await store.update('op-1a2b3c4d5e', (o) => {
      o.steps[0]!.status = 'running';
      return undefined;
    });

    // Assert
    expect(op.steps[0]!.status).toBe('pending');
    expect((await store.get('op-1a2b3c4d5e'))!.steps[0]!.status).toBe('pending');
  });

  it('refuses to update an operation that does not exist', async () => {
    // Arrange
    const store = createOperationStore(redis.client());

    // Act
    const outcome = store.update('op-missing0', (o) => o);

    // Assert
    await expect(outcome).rejects.toThrow('operation op-missing0 does not exist');
  });

  it('keeps a change from an observer that throws', async () => {
    // Arrange
    const store = createOperationStore(redis.client(), {
      onChange: () => {
        throw new Error('metrics broke');
      },
    });
    await store.create(operation());

    // Act
    const { changed } = await store.update('op-1a2b3c4d5e', (o) => ({ ...o, state: 'running' }));

    // Assert
    expect(changed).toBe(true);
    expect((await store.get('op-1a2b3c4d5e'))!.state).toBe('running');
  });

  it('keeps every one of 20 concurrent audit entries from several replicas exactly once', async () => {
    // Arrange: four connections stand for four replicas writing to one operation at once.
    const stores = [0, 1, 2, 3].map(() => createOperationStore(redis.client()));
    await stores[0]!.create(operation());
    const actors = Array.from({ length: 20 }, (_, i) => `U0ACTOR${String(i).padStart(2, '0')}`);

    // Act
    const results = await Promise.all(
      actors.map((actor, i) =>
        stores[i % stores.length]!.update('op-1a2b3c4d5e', (o) => ({
          ...o,
          audit: [...o.audit, { seq: o.audit.length + 1, at: '2026-11-29T22:05:00.000Z', actor, event: 'clicked' }],
        })),
      ),
    );

    // Assert
    const stored = (await stores[0]!.get('op-1a2b3c4d5e'))!;
    expect(results.every((r) => r.changed)).toBe(true);
    expect(stored.audit.map((e) => e.actor).sort()).toEqual(actors);
    expect(stored.audit.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(stored.revision).toBe(21);
    expect(new Set(results.map((r) => r.op.revision)).size).toBe(20);
  });

  it('applies a change once when its write landed but the reply was lost and the client sent it again', async () => {
    // Arrange: what ioredis does when Redis restarts between running the script and answering it:
    // it sends the script again on the new connection, and that second run finds the revision moved on.
    const resending = resendingOnce(redis.client(), 'eval');
    const store = createOperationStore(resending.client);
    await store.create(operation());

    // Act
    const { op, changed } = await store.update('op-1a2b3c4d5e', (o) => ({
      ...o,
      audit: [...o.audit, { seq: o.audit.length + 1, at: '2026-11-29T22:05:00.000Z', actor: 'bot', event: 'step started: verify' }],
    }));

    // Assert
    const stored = (await store.get('op-1a2b3c4d5e'))!;
    expect(resending.resent()).toBe(true);
    expect(changed).toBe(true);
    expect(stored.audit.map((e) => e.event)).toEqual(['step started: verify']);
    expect(stored.revision).toBe(2);
    expect(op.revision).toBe(2);
  });

  it('lists the operations of one cluster newest first, up to the limit', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation({ id: 'op-older0001', createdAt: '2026-11-01T10:00:00.000Z' }));
    await store.create(operation({ id: 'op-newest001', createdAt: '2026-11-29T10:00:00.000Z' }));
    await store.create(operation({ id: 'op-middle001', createdAt: '2026-11-15T10:00:00.000Z' }));
    await store.create(operation({ id: 'op-staging01', cluster: 'staging', createdAt: '2026-11-30T10:00:00.000Z' }));

    // Act
    const all = await store.listForCluster('production', 10);
    const two = await store.listForCluster('production', 2);
    const none = await store.listForCluster('lab', 10);

    // Assert
    expect(all.map((o) => o.id)).toEqual(['op-newest001', 'op-middle001', 'op-older0001']);
    expect(two.map((o) => o.id)).toEqual(['op-newest001', 'op-middle001']);
    expect(none).toEqual([]);
  });

  it('lists recent operations of every cluster newest first', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation({ id: 'op-prod0001', createdAt: '2026-11-01T10:00:00.000Z' }));
    await store.create(operation({ id: 'op-stag0001', cluster: 'staging', createdAt: '2026-11-02T10:00:00.000Z' }));

    // Act
    const recent = await store.listRecent(5);

    // Assert
    expect(recent.map((o) => [o.id, o.cluster])).toEqual([
      ['op-stag0001', 'staging'],
      ['op-prod0001', 'production'],
    ]);
  });
});

describe('operation store: secrets', () => {
  it('blanks a registered secret out of every text of an operation before it reaches Redis', async () => {
    // Arrange
    const canary = 'storeCanary-7f3a9c2e1b0d4f6a8e5c3b1d9f7a2e4c';
    const scrubber = new SecretScrubber();
    scrubber.add(canary);
    const client = redis.client();
    const store = createOperationStore(client, { scrub: (text) => scrubber.scrub(text) });
    await store.create(operation({ notes: [`talosctl said: key ${canary}`] }));

    // Act: a step's failure quotes a tool that printed a fragment of the secret
    await store.update('op-1a2b3c4d5e', (op) => ({ ...op, refusals: [`stderr: …${canary.slice(10)}`] }));
    const raw = await client.get('talos:op:op-1a2b3c4d5e');

    // Assert
    expect(raw).not.toContain(canary.slice(10, 26));
    expect(await store.get('op-1a2b3c4d5e')).toMatchObject({ notes: ['talosctl said: key [REDACTED]'], refusals: ['stderr: …[REDACTED]'] });
  });
  it('keeps the fields the bot acts on when a secret equals one of them, and blanks it only in free text', async () => {
    // Arrange: a sensitive output that happens to read like the cluster's name and a version
    const scrubber = new SecretScrubber();
    scrubber.add('production');
    scrubber.add('v1.12.11-secret');
    const store = createOperationStore(redis.client(), { scrub: (text) => scrubber.scrub(text) });
    const op = operation({
      cluster: 'production',
      channel: 'C0MAINTPRD',
      target: { version: 'v1.12.11-secret', fromVersion: 'v1.11.6' },
      steps: [{ id: 'production-s1', kind: 'upgrade-worker', node: '10.0.30.21', status: 'failed', detail: 'production leaked' }],
      notes: ['output said production'],
    });

    // Act
    await store.create(op);
    const read = await store.get(op.id);

    // Assert
    expect(read).toMatchObject({
      cluster: 'production',
      channel: 'C0MAINTPRD',
      target: { version: 'v1.12.11-secret', fromVersion: 'v1.11.6' },
      steps: [{ id: 'production-s1', node: '10.0.30.21', detail: '[REDACTED] leaked' }],
      notes: ['output said [REDACTED]'],
    });
  });
});

describe('the state machine in the operation store', () => {
  it('refuses a write that makes a move the machine does not allow, and writes nothing', async () => {
    // Arrange
    const changes: Operation[] = [];
    const store = createOperationStore(redis.client(), { onChange: (_before, after) => changes.push(after) });
    await store.create(operation({ state: 'cancelled', endedAt: '2026-11-29T22:10:00.000Z' }));

    // Act
    const write = store.update('op-1a2b3c4d5e', (o) => ({ ...o, state: 'running', startedBy: 'U0BOB' }));

    // Assert
    await expect(write).rejects.toMatchObject({ code: 'forbidden-transition', from: 'cancelled', to: 'running' });
    expect(await store.get('op-1a2b3c4d5e')).toMatchObject({ state: 'cancelled', revision: 1 });
    expect(changes).toEqual([]);
  });

  it('lets a write that keeps the state through, as every step and audit write does', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation({ state: 'completed' }));

    // Act
    const { op, changed } = await store.update('op-1a2b3c4d5e', (o) => ({
      ...o,
      permalink: 'https://example.slack.com/archives/C0MAINTPRD/p1',
    }));

    // Assert
    expect(changed).toBe(true);
    expect(op).toMatchObject({ state: 'completed', revision: 2 });
  });
});
