import { describe, expect, it } from 'vitest';
import { createNodeClassRecord } from '../../../src/ops/node-class-record.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();
const DEFAULT = 'a'.repeat(64);
const LONGHORN = 'b'.repeat(64);
const entry = (cls: 'default' | 'longhorn', schematic: string, op = 'op-aaaa1111') => ({
  class: cls,
  schematic,
  op,
  at: '2026-12-01T10:00:00.000Z',
});

describe('the record of node classes on a real Redis', () => {
  it('keeps each node the last completed operation installed, and leaves the others as they were', async () => {
    // Arrange
    const record = createNodeClassRecord(redis.client());
    await record.write(
      'production',
      new Map([
        ['10.0.30.11', entry('default', DEFAULT)],
        ['10.0.30.21', entry('longhorn', LONGHORN)],
      ]),
    );

    // Act
    await record.write('production', new Map([['10.0.30.21', entry('longhorn', LONGHORN, 'op-bbbb2222')]]));
    const read = await record.read('production');

    // Assert
    expect(Object.fromEntries(read.byNode)).toEqual({
      '10.0.30.11': entry('default', DEFAULT),
      '10.0.30.21': entry('longhorn', LONGHORN, 'op-bbbb2222'),
    });
    expect(read.ignored).toEqual([]);
    expect((await record.read('staging')).byNode.size).toBe(0);
  });

  it('ignores, and names, every field that is not a record the bot writes', async () => {
    // Arrange: values written by hand into the hash.
    const client = redis.client();
    const record = createNodeClassRecord(client);
    await record.write('production', new Map([['10.0.30.11', entry('default', DEFAULT)]]));
    await client.hset('talos:node-class:production', {
      '10.0.30.12': 'longhorn',
      '10.0.30.13': JSON.stringify({ ...entry('longhorn', LONGHORN), class: 'fast' }),
      '10.0.30.21': JSON.stringify({ ...entry('longhorn', LONGHORN), extra: true }),
      'not-a-node': JSON.stringify(entry('default', DEFAULT)),
    });

    // Act
    const read = await record.read('production');

    // Assert
    expect([...read.byNode.keys()]).toEqual(['10.0.30.11']);
    expect(read.ignored.sort()).toEqual(['10.0.30.12', '10.0.30.13', '10.0.30.21', 'not-a-node']);
  });
});
