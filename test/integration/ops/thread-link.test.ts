import { describe, expect, it } from 'vitest';
import type { Operation } from '../../../src/ops/operation.ts';
import { createOperationStore } from '../../../src/ops/operation-store.ts';
import { threadLink } from '../../../src/ops/thread-link.ts';
import { operationRefById } from '../../../src/chat/operation-link.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';
import { anOperation } from '../../support/builders.ts';

const redis = useRedisFixture();

function operation(overrides: Partial<Operation> = {}): Operation {
  return anOperation({
    target: { version: 'v1.12.1' },
    rootTs: '1700000000.000100',
    ...overrides,
  });
}

/** A chat port that answers `chat.getPermalink` in Slack's form and counts the calls. */
function permalinks(answer: 'ok' | 'fail' = 'ok') {
  const calls: [string, string][] = [];
  return {
    calls,
    permalink(channel: string, ts: string): Promise<string> {
      calls.push([channel, ts]);
      if (answer === 'fail') return Promise.reject(new Error('ratelimited'));
      return Promise.resolve(`https://talos-test.slack.com/archives/${channel}/p${ts.replace('.', '')}`);
    },
  };
}

describe("links to an operation's thread", () => {
  it('asks Slack once per operation and stores the link on it', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    const chat = permalinks();
    await store.create(operation());

    // Act
    const first = await threadLink({ store, chat }, (await store.get('op-1a2b3c4d5e'))!);
    const second = await threadLink({ store, chat }, (await store.get('op-1a2b3c4d5e'))!);
    const named = await operationRefById({ store, chat }, 'op-1a2b3c4d5e');

    // Assert
    expect(first).toBe('https://talos-test.slack.com/archives/C0MAINTPRD/p1700000000000100');
    expect(second).toBe(first);
    expect(named).toBe(`<${first}|op-1a2b3c4d5e>`);
    expect(chat.calls).toEqual([['C0MAINTPRD', '1700000000.000100']]);
    expect((await store.get('op-1a2b3c4d5e'))?.permalink).toBe(first);
  });

  it('names the bare id while the operation has no message, or Slack does not answer', async () => {
    // Arrange
    const store = createOperationStore(redis.client());
    await store.create(operation({ id: 'op-aaaa1111', rootTs: undefined }));
    await store.create(operation({ id: 'op-bbbb2222' }));
    const chat = permalinks('fail');

    // Act
    const unposted = await operationRefById({ store, chat }, 'op-aaaa1111');
    const unanswered = await operationRefById({ store, chat }, 'op-bbbb2222');
    const unknown = await operationRefById({ store, chat }, 'op-cccc3333');

    // Assert
    expect([unposted, unanswered, unknown]).toEqual(['`op-aaaa1111`', '`op-bbbb2222`', '`op-cccc3333`']);
    expect(chat.calls).toEqual([['C0MAINTPRD', '1700000000.000100']]);
    expect((await store.get('op-bbbb2222'))?.permalink).toBeUndefined();
  });
});
