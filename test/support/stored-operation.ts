import { Redis } from 'ioredis';
import { Operation } from '../../src/ops/operation.ts';
import type { Harness } from './harness.ts';

/** Rewrites the stored operation directly in Redis, as someone with access to it could. */
export async function tamperStoredOperation(h: Pick<Harness, 'redis'>, opId: string, edit: (op: Operation) => void): Promise<void> {
  const client = new Redis(h.redis.url, { maxRetriesPerRequest: 1 });
  try {
    const key = `talos:op:${opId}`;
    const op = JSON.parse((await client.get(key))!) as Operation;
    edit(op);
    await client.set(key, JSON.stringify(op));
  } finally {
    client.disconnect();
  }
}

/** The operation as the bot stored it in the harness's Redis, parsed by the bot's own schema. */
export async function storedOperation(h: Pick<Harness, 'redis'>, opId: string): Promise<Operation> {
  const client = new Redis(h.redis.url, { maxRetriesPerRequest: 1 });
  try {
    const raw = await client.get(`talos:op:${opId}`);
    if (raw === null) throw new Error(`${opId} is not stored`);
    return Operation.parse(JSON.parse(raw));
  } finally {
    client.disconnect();
  }
}
