import { describe, expect, it } from 'vitest';
import type { Estate } from '../../../src/cluster/estate.ts';
import { createObservedEstates, observedRecord } from '../../../src/ops/observed-estate.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();
const AT = new Date('2026-12-05T03:51:00.000Z');

function estate(overrides: Partial<Estate['observation']> = {}): Estate {
  return {
    observation: {
      talosconfig: { ok: true, value: ['10.0.30.11'] },
      etcd: {
        ok: true,
        value: [
          { id: '1', hostname: 'talos-prd-cp-1', address: '10.0.30.11' },
          { id: '2', hostname: 'talos-prd-cp-2', address: '10.0.30.12' },
        ],
      },
      kube: {
        ok: true,
        value: [
          { name: 'talos-prd-cp-1', address: '10.0.30.11', role: 'controlplane' },
          { name: 'talos-prd-w-1', address: '10.0.30.21', role: 'worker' },
        ],
      },
      terraform: { ok: true, value: [] },
      ...overrides,
    },
    controlPlanes: ['10.0.30.11', '10.0.30.12'],
    workers: ['10.0.30.21'],
    // The inventory's name of a node: what the record keeps is what the cluster itself says.
    nodeNames: {
      '10.0.30.11': 'talos-prd-cp-1',
      '10.0.30.12': 'talos-prd-cp-2',
      '10.0.30.21': 'talos-prd-w-1',
      '10.0.30.99': 'from-inventory',
    },
    disagreements: [],
    unread: [],
  };
}

function logs(): { warn: (fields: object, message: string) => void; lines: { fields: object; message: string }[] } {
  const lines: { fields: object; message: string }[] = [];
  return { lines, warn: (fields, message) => void lines.push({ fields, message }) };
}

describe('the record of the last look at a cluster, on a real Redis', () => {
  it('keeps one record per cluster, overwritten by the next observation', async () => {
    // Arrange
    const store = createObservedEstates(redis.client(), logs());
    await store.write('production', observedRecord(estate(), AT)!);
    const later = new Date(AT.getTime() + 60_000);

    // Act
    await store.write('production', { ...observedRecord(estate(), later)!, workers: [] });
    const read = await store.read('production');

    // Assert
    expect(read).toEqual({
      controlPlanes: ['10.0.30.11', '10.0.30.12'],
      workers: [],
      nodeNames: { '10.0.30.11': 'talos-prd-cp-1', '10.0.30.12': 'talos-prd-cp-2', '10.0.30.21': 'talos-prd-w-1' },
      observedAt: later.toISOString(),
    });
    expect(await redis.client().keys('talos:observed-estate:*')).toEqual(['talos:observed-estate:production']);
    expect(await store.read('staging')).toBeUndefined();
  });

  it('records nothing when neither etcd nor Kubernetes answered: nothing was seen', () => {
    // Act
    const record = observedRecord(estate({ etcd: { ok: false, error: 'no answer' }, kube: { ok: false, error: 'no answer' } }), AT);

    // Assert
    expect(record).toBeUndefined();
  });

  it('ignores a record that is not one the bot writes, and says so in the log', async () => {
    // Arrange: a hand-made record that moves a name to another address, with a field the bot never writes.
    const client = redis.client();
    const log = logs();
    const store = createObservedEstates(client, log);
    const tampered = { ...observedRecord(estate(), AT)!, nodeNames: { '10.0.30.66': 'talos-prd-cp-2' }, by: 'hand' };
    await client.set('talos:observed-estate:production', JSON.stringify(tampered));
    await client.set('talos:observed-estate:staging', 'not json');

    // Act
    const production = await store.read('production');
    const staging = await store.read('staging');

    // Assert
    expect(production).toBeUndefined();
    expect(staging).toBeUndefined();
    expect(log.lines.map((l) => l.fields)).toEqual([
      { cluster: 'production', key: 'talos:observed-estate:production' },
      { cluster: 'staging', key: 'talos:observed-estate:staging' },
    ]);
  });
});
