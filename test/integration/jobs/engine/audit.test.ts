import { describe, expect, it } from 'vitest';
import type { ChatMessage, ChatPort, ReplyOptions, ThreadReply } from '../../../../src/port/chat-port.ts';
import { createAudit, editCarrier, seqsIn } from '../../../../jobs/engine/audit.ts';
import type { Operation } from '../../../../src/ops/operation.ts';
import { createOperationStore, type OperationStore } from '../../../../src/ops/operation-store.ts';
import { createRunLease } from '../../../../src/ops/run-lease.ts';
import { useRedisFixture } from '../../../support/redis-fixture.ts';
import { systemClock } from '../../../../src/time/clock.ts';
import { anOperation } from '../../../support/builders.ts';

const redis = useRedisFixture();

const OP = 'op-1a2b3c4d5e';
const ROOT = '1700000000.000100';

function operation(overrides: Partial<Operation> = {}): Operation {
  return anOperation({
    id: OP,
    state: 'running',
    target: { version: 'v1.12.1' },
    rootTs: ROOT,
    ...overrides,
  });
}

type Failure = 'before-write' | 'after-write';

/** A thread in memory. `fail` makes the next posts fail, before or after Slack wrote them. */
class FakeThread implements Pick<ChatPort, 'reply' | 'replies'> {
  readonly posted: ThreadReply[] = [];
  readonly sendOptions: (ReplyOptions | undefined)[] = [];
  fail: Failure[] = [];
  #next = 1;

  reply(_channel: string, _threadTs: string, message: ChatMessage, options?: ReplyOptions): Promise<{ ts: string }> {
    this.sendOptions.push(options);
    const failure = this.fail.shift();
    const ts = `1700000001.${String(this.#next++).padStart(6, '0')}`;
    if (failure !== 'before-write') this.posted.push({ ts, text: message.text });
    if (failure !== undefined) return Promise.reject(new Error('An HTTP protocol error occurred: statusCode = 503'));
    return Promise.resolve({ ts });
  }

  replies(): Promise<ThreadReply[]> {
    return Promise.resolve([...this.posted]);
  }
}

function chatOn(thread: FakeThread): ChatPort {
  const unused = (): Promise<never> => Promise.reject(new Error('not used by the audit'));
  return {
    post: unused,
    update: unused,
    ephemeral: unused,
    upload: unused,
    permalink: unused,
    reply: thread.reply.bind(thread),
    replies: thread.replies.bind(thread),
  };
}

function auditOn(store: OperationStore, thread: FakeThread) {
  const postLease = createRunLease(redis.client(), { ttlMs: 1000, pollMs: 10, prefix: 'talos:audit-post' });
  return createAudit(store, chatOn(thread), {
    postLease,
    attempts: 2,
    backoffMs: 1,
    clock: { ...systemClock, now: () => new Date('2026-11-29T22:05:00.000Z') },
  });
}

describe('the audit thread on a real Redis', () => {
  it('numbers each entry and posts it once, in order, without the client retrying it blindly', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation());
    const thread = new FakeThread();
    const audit = auditOn(store, thread);

    // Act
    await audit.record(OP, { actor: 'U0BOB', event: 'started' });
    await audit.record(OP, { actor: 'bot', event: 'etcd snapshot taken', detail: 'production-1' });

    // Assert
    expect(thread.posted.map((r) => r.text)).toEqual(['#1 started', '#2 etcd snapshot taken: production-1']);
    expect(thread.sendOptions).toEqual([{ once: true }, { once: true }]);
    const stored = (await store.get(OP))!.audit;
    expect(stored.map((e) => [e.seq, e.ts, e.post])).toEqual([
      [1, thread.posted[0]!.ts, undefined],
      [2, thread.posted[1]!.ts, undefined],
    ]);
  });

  it('keeps an entry Slack refused, and posts it with the next one, in order', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation());
    const thread = new FakeThread();
    const audit = auditOn(store, thread);
    await audit.record(OP, { actor: 'U0BOB', event: 'started' });

    // Act: Slack is down for longer than one flush tries.
    thread.fail = ['before-write', 'before-write'];
    await audit.record(OP, { actor: 'U0CAROL', event: 'approved 10.0.30.11' });
    const during = thread.posted.map((r) => r.text);
    await audit.record(OP, { actor: 'bot', event: 'step started: control plane 10.0.30.11' });

    // Assert
    expect(during).toEqual(['#1 started']);
    expect(thread.posted.map((r) => r.text)).toEqual(['#1 started', '#2 approved 10.0.30.11\n#3 step started: control plane 10.0.30.11']);
    expect((await store.get(OP))!.audit.map((e) => e.ts)).toEqual([thread.posted[0]!.ts, thread.posted[1]!.ts, thread.posted[1]!.ts]);
  });

  it('does not post again a reply Slack wrote before it failed', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation());
    const thread = new FakeThread();
    const audit = auditOn(store, thread);

    // Act
    thread.fail = ['after-write'];
    await audit.record(OP, { actor: 'U0BOB', event: 'started' });

    // Assert
    expect(thread.posted.map((r) => r.text)).toEqual(['#1 started']);
    expect((await store.get(OP))!.audit[0]!.ts).toBe(thread.posted[0]!.ts);
  });

  it('after a crash, posts what was stored but never sent, and adopts what was sent but never marked', async () => {
    // Arrange: #1 went out and the process died before marking it; #2 was stored, then the process died.
    const store = createOperationStore(redis.client());
    const thread = new FakeThread();
    await thread.reply('C0MAINTPRD', ROOT, { text: '#1 started' });
    await store.create(
      operation({
        audit: [
          { seq: 1, at: '2026-11-29T22:05:00.000Z', actor: 'U0BOB', event: 'started', post: { text: '#1 started' }, attempted: true },
          {
            seq: 2,
            at: '2026-11-29T22:06:00.000Z',
            actor: 'U0CAROL',
            event: 'approved 10.0.30.11',
            post: { text: '#2 approved 10.0.30.11' },
          },
        ],
      }),
    );
    const audit = auditOn(store, thread);

    // Act
    const flushed = await audit.flush(OP);

    // Assert
    expect(flushed).toBe(true);
    expect(thread.posted.map((r) => r.text)).toEqual(['#1 started', '#2 approved 10.0.30.11']);
    expect((await store.get(OP))!.audit.map((e) => e.ts)).toEqual(thread.posted.map((r) => r.ts));
  });

  it('keeps entries recorded before the root message exists, and posts them once it does', async () => {
    // Arrange: Slack showed the plan (it answered 5xx after posting it) and someone clicked it before the bot knew its ts.
    const store = createOperationStore(redis.client());
    await store.create(operation({ rootTs: undefined }));
    const thread = new FakeThread();
    const audit = auditOn(store, thread);
    await audit.record(OP, { actor: 'bot', event: 'preflight passed, plan posted' });
    await audit.record(OP, { actor: 'U0BOB', event: 'started' });
    const before = [...thread.posted];

    // Act
    await store.update(OP, (o) => ({ ...o, rootTs: ROOT }));
    await audit.flush(OP);

    // Assert
    expect(before).toEqual([]);
    expect(thread.posted.map((r) => r.text)).toEqual(['#1 preflight passed, plan posted\n#2 started']);
  });

  it('lets one replica post at a time, so two flushing at once post nothing twice', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(
      operation({
        audit: [1, 2, 3].map((seq) => ({
          seq,
          at: '2026-11-29T22:05:00.000Z',
          actor: 'bot',
          event: `e${seq}`,
          post: { text: `#${seq} e${seq}` },
        })),
      }),
    );
    const thread = new FakeThread();

    // Act
    await Promise.all([auditOn(store, thread).flush(OP), auditOn(createOperationStore(redis.client()), thread).flush(OP)]);

    // Assert
    expect(thread.posted.map((r) => r.text)).toEqual(['#1 e1\n#2 e2\n#3 e3']);
  });

  it('writes a decision and its entry together, or neither when the operation is no longer in the state the decision expects', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation());
    const thread = new FakeThread();
    const audit = auditOn(store, thread);

    // Act
    const first = await audit.transition(
      OP,
      { actor: 'U0CAROL', event: 'approved 10.0.30.11' },
      (o) => (o.reason === undefined ? { ...o, reason: 'decided' } : undefined),
      { hold: true },
    );
    const second = await audit.transition(OP, { actor: 'U0DAVE', event: 'approved 10.0.30.11' }, (o) =>
      o.reason === undefined ? { ...o, reason: 'decided again' } : undefined,
    );

    // Assert
    expect(first.changed).toBe(true);
    expect(second.changed).toBe(false);
    const stored = (await store.get(OP))!;
    expect(stored.reason).toBe('decided');
    expect(stored.audit.map((e) => [e.actor, e.event, e.hold])).toEqual([['U0CAROL', 'approved 10.0.30.11', true]]);
    expect(thread.posted).toEqual([]);
  });

  it('holds noted entries until the next recorded one, then posts them together in one reply', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation());
    const thread = new FakeThread();
    const audit = auditOn(store, thread);

    // Act
    await audit.note(OP, { actor: 'U0CAROL', event: 'approved 10.0.30.11' });
    await audit.note(OP, { actor: 'bot', event: 'step started: control plane 10.0.30.11' });
    const flushedAlone = await audit.flush(OP);
    const whileHeld = [...thread.posted];
    await audit.record(
      OP,
      { actor: 'bot', event: 'approval requested: 10.0.30.12' },
      { text: 'Approval needed', blocks: [{ type: 'actions', elements: [] }] },
    );

    // Assert
    expect(flushedAlone).toBe(true);
    expect(whileHeld).toEqual([]);
    expect(thread.posted.map((r) => r.text)).toEqual([
      '#1 approved 10.0.30.11\n#2 step started: control plane 10.0.30.11\n#3 Approval needed',
    ]);
    const stored = (await store.get(OP))!.audit;
    expect(stored.map((e) => [e.ts, e.hold, e.post])).toEqual([1, 2, 3].map(() => [thread.posted[0]!.ts, undefined, undefined]));
  });

  it('leads a broadcast reply with its own entry, so the channel and a notification show the question first', async () => {
    // Arrange: the previous step's result waits to go out with the next reply.
    const store = createOperationStore(redis.client());
    await store.create(operation());
    const thread = new FakeThread();
    const audit = auditOn(store, thread);
    await audit.note(OP, { actor: 'bot', event: 'upgraded: control plane 10.0.30.11' });

    // Act
    await audit.record(OP, { actor: 'bot', event: 'reminder' }, { text: 'plain reply' });
    await audit.note(OP, { actor: 'bot', event: 'upgraded: control plane 10.0.30.12' });
    await audit.record(
      OP,
      { actor: 'bot', event: 'approval requested: 10.0.30.13' },
      {
        text: 'Approve 10.0.30.13? <@U0CAROL>',
        blocks: [{ type: 'section', text: { type: 'mrkdwn', text: '*Approve 10.0.30.13?*' } }],
        broadcast: true,
      },
    );

    // Assert
    expect(thread.posted.map((r) => r.text)).toEqual([
      '#1 upgraded: control plane 10.0.30.11\n#2 plain reply',
      // The notification's first line is the question itself; its entry's number comes next.
      'Approve 10.0.30.13? <@U0CAROL>\n#4 approval requested: 10.0.30.13\n#3 upgraded: control plane 10.0.30.12',
    ]);
    expect(thread.sendOptions).toEqual([{ once: true }, { once: true, broadcast: true }]);
    expect(seqsIn(thread.posted[1]!.text)).toEqual([4, 3]);
    expect((await store.get(OP))!.audit.map((e) => [e.seq, e.ts, e.post])).toEqual([
      [1, thread.posted[0]!.ts, undefined],
      [2, thread.posted[0]!.ts, undefined],
      [3, thread.posted[1]!.ts, undefined],
      [4, thread.posted[1]!.ts, undefined],
    ]);
  });

  it('adopts a batch Slack wrote before it failed, and posts only what the reply did not carry', async () => {
    // Arrange: #1 and #2 went out together, Slack answered 503; #3 came after.
    const store = createOperationStore(redis.client());
    await store.create(operation());
    const thread = new FakeThread();
    const audit = auditOn(store, thread);
    await audit.note(OP, { actor: 'bot', event: 'e1' });
    thread.fail = ['after-write', 'before-write'];
    await audit.record(OP, { actor: 'bot', event: 'e2' });
    await audit.note(OP, { actor: 'bot', event: 'e3' });

    // Act
    await audit.record(OP, { actor: 'bot', event: 'e4' });

    // Assert
    expect(thread.posted.map((r) => r.text)).toEqual(['#1 e1\n#2 e2', '#3 e3\n#4 e4']);
    expect((await store.get(OP))!.audit.map((e) => e.ts)).toEqual([0, 0, 1, 1].map((i) => thread.posted[i]!.ts));
  });

  it('splits a long backlog so that no reply carries more blocks than Slack shows', async () => {
    // Arrange: 60 entries of one block each, stored while Slack was away.
    const store = createOperationStore(redis.client());
    const audit60 = Array.from({ length: 60 }, (_, i) => ({
      seq: i + 1,
      at: '2026-11-29T22:05:00.000Z',
      actor: 'bot',
      event: `e${i + 1}`,
      post: { text: `#${i + 1} e${i + 1}` },
    }));
    await store.create(operation({ audit: audit60 }));
    const thread = new FakeThread();

    // Act
    const flushed = await auditOn(store, thread).flush(OP);

    // Assert
    expect(flushed).toBe(true);
    expect(thread.posted.map((r) => r.text.split('\n').length)).toEqual([40, 20]);
    expect(thread.posted.flatMap((r) => seqsIn(r.text))).toEqual(audit60.map((e) => e.seq));
  });
});

describe('editing a reply that carries entries', () => {
  const entry = (seq: number, extra: Partial<Operation['audit'][number]> = {}) => ({
    seq,
    at: '2026-11-29T22:05:00.000Z',
    actor: 'bot',
    event: `e${seq}`,
    ...extra,
  });

  it('keeps its own number first, then the other entries it carried, posted or only sent', () => {
    // Arrange: #1 posted elsewhere; #2 posted with the request #3; #4 sent with it but not yet adopted.
    const op = operation({ audit: [entry(1, { ts: 'T0' }), entry(2, { ts: 'T1' }), entry(3, { ts: 'T1' })] });
    const decided = {
      text: '✅ Approved by <@U0CAROL>',
      blocks: [{ type: 'section', text: { type: 'mrkdwn', text: '✅ Approved by <@U0CAROL>' } }],
    };
    const unadopted = operation({
      audit: [
        entry(1, { ts: 'T0' }),
        entry(2, { attempted: true, post: { text: '#2 e2' } }),
        entry(3, { attempted: true, post: { text: '#3 request' } }),
      ],
    });

    // Act
    const edited = editCarrier(op, 'T1', 3, decided);
    const early = editCarrier(unadopted, 'T1', 3, decided);

    // Assert
    expect(edited.text).toBe('#3 ✅ Approved by <@U0CAROL>\n#2 e2');
    expect(edited.blocks).toEqual([
      { type: 'section', text: { type: 'mrkdwn', text: '#3 ✅ Approved by <@U0CAROL>' } },
      { type: 'section', text: { type: 'mrkdwn', text: '#2 e2' } },
    ]);
    expect(early.text).toBe('#3 ✅ Approved by <@U0CAROL>\n#2 e2');
    expect(seqsIn(early.text)).toEqual([3, 2]);
  });

  it('leaves a message that carries no entry as it is', () => {
    const message = { text: '⏱ Expired', blocks: [{ type: 'section', text: { type: 'mrkdwn', text: '⏱ Expired' } }] };

    expect(editCarrier(operation(), 'T9', undefined, message)).toBe(message);
  });
});
