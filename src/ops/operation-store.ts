import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { scrubValues } from '../log/secret-scrubber.ts';
import { Operation } from './operation.ts';
import { canTransition, FINISHED, ForbiddenTransition } from './state-machine.ts';

export interface OperationStore {
  create(op: Operation): Promise<void>;
  get(id: string): Promise<Operation | undefined>;
  /**
   * Reads, changes and writes an operation atomically (optimistic: retried when another
   * replica wrote in between). `mutate` returns the new value, or `undefined` to leave it.
   * Throws `ForbiddenTransition` (nothing written) for a change of state the state machine does not allow.
   */
  update(id: string, mutate: (op: Operation) => Operation | undefined): Promise<{ op: Operation; changed: boolean }>;
  /** Newest first. */
  listForCluster(cluster: string, limit: number): Promise<Operation[]>;
  listRecent(limit: number): Promise<Operation[]>;
  /**
   * What retention let go: index entries whose operation has expired, and failed operations that
   * ended before `cutoff` unless `keep` keeps them (one that still holds its cluster waits for an
   * operator). Returns the ids it dropped from the indexes.
   */
  sweep(cutoff: Date, keep: (op: Operation) => Promise<boolean>): Promise<string[]>;
}

const key = (id: string): string => `talos:op:${id}`;
const byCluster = (cluster: string): string => `talos:ops:${cluster}`;
const ALL = 'talos:ops';
/** Enough to recognise a write among those of the replicas racing it. */
const RECENT_WRITES = 8;

/**
 * Writes only if nobody else wrote since we read: the revision is the compare value. ARGV[3] is
 * when the operation expires (ms since the epoch), or 0: every write sets it anew, so a
 * finished operation's later writes (an audit reply posted after its end) keep its expiry.
 */
const COMPARE_AND_SET = `
local current = redis.call('GET', KEYS[1])
if not current then return -1 end
if cjson.decode(current).revision ~= tonumber(ARGV[1]) then return 0 end
if tonumber(ARGV[3]) > 0 then redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1`;

const DELETE_IF_REVISION = `
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).revision == tonumber(ARGV[1]) then return redis.call('DEL', KEYS[1]) end
return 0`;

/** Index entries read and checked per round trip by the sweep. */
const SWEEP_BATCH = 500;

export interface OperationStoreOptions {
  /** Called after every `update` this process won, with the value before and after: where metrics see operations and steps end. */
  onChange?: (before: Operation, after: Operation) => void;
  /**
   * How long a finished operation (completed, refused, cancelled) is kept after it ended, in ms:
   * its key gets a Redis expiry at that time. Unset: kept forever. Operations that run or wait
   * never get one.
   */
  retentionMs?: number;
  /** Blanks secrets out of every text of an operation before it is written (its audit, step details, stop reasons quote tool output). */
  scrub?: (text: string) => string;
}

/**
 * Fields of an operation (and of its steps, approvals, audit entries, plan, failure) that the bot acts
 * on: ids, the cluster and channel, kinds and states, versions and images, node addresses and names,
 * people, times, nonces and Slack timestamps. They are never scrubbed; only free text is (reasons,
 * details, notes, refusals, evidence).
 */
export const STRUCTURAL_FIELDS: ReadonlySet<string> = new Set([
  'id',
  'kind',
  'cluster',
  'channel',
  'state',
  'status',
  'step',
  'event',
  'node',
  'nodeName',
  'host',
  'address',
  'role',
  'image',
  'version',
  'fromVersion',
  'talosVersion',
  'from',
  'to',
  'schematic',
  'commit',
  'requestedBy',
  'startedBy',
  'cancelRequestedBy',
  'appliedBy',
  'by',
  'actor',
  'createdAt',
  'startedAt',
  'endedAt',
  'issuedAt',
  'issuedBootId',
  'requestedAt',
  'expiresAt',
  'remindedAt',
  'appliedAt',
  'takenAt',
  'since',
  'opensAt',
  'at',
  'nonce',
  'planNonce',
  'stopNonce',
  'messageTs',
  'rootTs',
  'ts',
  'permalink',
  'stagingOp',
  'stagingLink',
  'rollbackOp',
  'path',
]);

export function createOperationStore(redis: Redis, options: OperationStoreOptions = {}): OperationStore {
  const { retentionMs } = options;
  const clean = (op: Operation): Operation => (options.scrub ? scrubValues(op, options.scrub, STRUCTURAL_FIELDS) : op);
  /** When `op` expires, in ms since the epoch; 0 while it may still change (or retention is off). */
  const expiresAt = (op: Operation): number => {
    if (retentionMs === undefined || !FINISHED.includes(op.state)) return 0;
    return Date.parse(op.endedAt ?? op.createdAt) + retentionMs;
  };
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
      const expiry = expiresAt(op);
      const value = JSON.stringify(clean(Operation.parse(op)));
      const write = redis.multi();
      if (expiry > 0) write.set(key(op.id), value, 'PXAT', expiry, 'NX');
      else write.set(key(op.id), value, 'NX');
      await write.zadd(byCluster(op.cluster), score, op.id).zadd(ALL, score, op.id).exec();
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
        if (!canTransition(current.state, next.state)) throw new ForbiddenTransition(id, current.state, next.state);
        const writeId = randomUUID();
        const written = clean(
          Operation.parse({ ...next, revision: current.revision + 1, writes: [...(current.writes ?? []), writeId].slice(-RECENT_WRITES) }),
        );
        const result = await redis.eval(
          COMPARE_AND_SET,
          1,
          key(id),
          String(current.revision),
          JSON.stringify(written),
          String(expiresAt(written)),
        );
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
    async sweep(cutoff, keep) {
      const indexes = [ALL];
      for await (const keys of redis.scanStream({ match: byCluster('*'), type: 'zset', count: 100 })) indexes.push(...(keys as string[]));
      const dropped = new Set<string>();
      for (const index of indexes) {
        // Scored by creation: anything created after the cutoff cannot have ended before it.
        const ids = await redis.zrangebyscore(index, '-inf', cutoff.getTime());
        for (let i = 0; i < ids.length; i += SWEEP_BATCH) {
          const batch = ids.slice(i, i + SWEEP_BATCH);
          const raws = await redis.mget(batch.map(key));
          const gone: string[] = [];
          for (const [j, raw] of raws.entries()) {
            const id = batch[j]!;
            if (raw === null) {
              gone.push(id);
              continue;
            }
            // One that this version cannot read is left as it is: the sweep never guesses what it may delete.
            const parsed = Operation.safeParse(JSON.parse(raw));
            if (!parsed.success) continue;
            const op = parsed.data;
            if (op.state !== 'failed' || op.endedAt === undefined || Date.parse(op.endedAt) >= cutoff.getTime() || (await keep(op)))
              continue;
            // Only while it is still that failed operation: a Retry or a cancel in between wins.
            if ((await redis.eval(DELETE_IF_REVISION, 1, key(id), String(op.revision))) === 1) {
              await redis.zrem(byCluster(op.cluster), id);
              gone.push(id);
            }
          }
          if (gone.length > 0) {
            await redis.zrem(index, ...gone);
            if (index !== ALL) await redis.zrem(ALL, ...gone);
            for (const id of gone) dropped.add(id);
          }
        }
      }
      return [...dropped];
    },
  };
}
