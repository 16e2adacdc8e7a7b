import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { scrubValues } from '../log/secret-scrubber.ts';
import { Operation } from './operation.ts';

export interface OperationStore {
  create(op: Operation): Promise<void>;
  get(id: string): Promise<Operation | undefined>;
  /**
   * Reads, changes and writes an operation atomically (optimistic: retried when another
   * replica wrote in between). `mutate` returns the new value, or `undefined` to leave it.
   */
  update(id: string, mutate: (op: Operation) => Operation | undefined): Promise<{ op: Operation; changed: boolean }>;
  /** Newest first. */
  listForCluster(cluster: string, limit: number): Promise<Operation[]>;
  listRecent(limit: number): Promise<Operation[]>;
}

const key = (id: string): string => `talos:op:${id}`;
const byCluster = (cluster: string): string => `talos:ops:${cluster}`;
const ALL = 'talos:ops';
/** Enough to recognise a write among those of the replicas racing it. */
const RECENT_WRITES = 8;

/** Writes only if nobody else wrote since we read: the revision is the compare value. */
const COMPARE_AND_SET = `
local current = redis.call('GET', KEYS[1])
if not current then return -1 end
if cjson.decode(current).revision ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1`;

export interface OperationStoreOptions {
  /** Called after every `update` this process won, with the value before and after: where metrics see operations and steps end. */
  onChange?: (before: Operation, after: Operation) => void;
  /** Blanks secrets out of every text of an operation before it is written (its audit, step details, stop reasons quote tool output). */
  scrub?: (text: string) => string;
}

export function createOperationStore(redis: Redis, options: OperationStoreOptions = {}): OperationStore {
  const clean = (op: Operation): Operation => (options.scrub ? scrubValues(op, options.scrub) : op);
  const get = async (id: string): Promise<Operation | undefined> => {
    const raw = await redis.get(key(id));
    return raw === null ? undefined : Operation.parse(JSON.parse(raw));
  };
  const list = async (index: string, limit: number): Promise<Operation[]> => {
    const ids = await redis.zrevrange(index, 0, limit - 1);
    const ops = await Promise.all(ids.map(get));
    return ops.filter((o): o is Operation => o !== undefined);
  };
  return {
    async create(op) {
      const score = Date.parse(op.createdAt);
      await redis
        .multi()
        .set(key(op.id), JSON.stringify(clean(Operation.parse(op))), 'NX')
        .zadd(byCluster(op.cluster), score, op.id)
        .zadd(ALL, score, op.id)
        .exec();
    },
    get,
    async update(id, mutate) {
      const notify = (before: Operation, after: Operation): void => {
        try {
          options.onChange?.(before, after);
        } catch {
          // The write already happened; an observer's fault must not make it look failed.
        }
      };
      let pending: { writeId: string; before: Operation } | undefined;
      for (let attempt = 0; attempt < 50; attempt += 1) {
        const current = await get(id);
        if (current === undefined) throw new Error(`operation ${id} does not exist`);
        // A compare that failed because our own earlier attempt had landed (its reply was lost and ioredis
        // sent the script again after reconnecting): the change is in, and must not be applied twice.
        if (pending !== undefined && current.writes?.includes(pending.writeId)) {
          notify(pending.before, current);
          return { op: current, changed: true };
        }
        const next = mutate(structuredClone(current));
        if (next === undefined) return { op: current, changed: false };
        const writeId = randomUUID();
        const written = clean(Operation.parse({ ...next, revision: current.revision + 1, writes: [...(current.writes ?? []), writeId].slice(-RECENT_WRITES) }));
        const result = await redis.eval(COMPARE_AND_SET, 1, key(id), String(current.revision), JSON.stringify(written));
        if (result === 1) {
          notify(current, written);
          return { op: written, changed: true };
        }
        pending = { writeId, before: current };
      }
      throw new Error(`operation ${id} is being changed too often to update`);
    },
    listForCluster: (cluster, limit) => list(byCluster(cluster), limit),
    listRecent: (limit) => list(ALL, limit),
  };
}
