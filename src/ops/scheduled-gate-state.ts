import type { Redis } from 'ioredis';
import type { GateVerdict } from '../rules/gate-verdict-change.ts';

/** The last verdict of a cluster's scheduled gate, and when it last changed. */
export interface StoredVerdict {
  verdict: GateVerdict;
  /** When the verdict became what it is (ISO). */
  changedAt: string;
  /** When a scheduled gate last ran (ISO). */
  lastRunAt: string;
}

/**
 * What the scheduled gates remember between runs, per cluster, in Redis: the last verdict (so any
 * replica can tell a change), the operation whose hold of the cluster was last announced, and the
 * runs since the last daily summary. Bounded by the inventory:
 * one entry per cluster, removed when the cluster or its schedule leaves it.
 */
export interface ScheduledGateState {
  last(cluster: string): Promise<StoredVerdict | undefined>;
  save(cluster: string, stored: StoredVerdict): Promise<void>;
  /** Counts one run toward the next daily summary. */
  countRun(cluster: string, passed: boolean): Promise<void>;
  /** The runs since the last summary, and starts counting again, in one step. */
  takeCounts(cluster: string): Promise<{ runs: number; failed: number }>;
  /** The operation whose hold of the cluster the scheduled gate last announced, if any. */
  announcedHold(cluster: string): Promise<string | undefined>;
  /** Records that the gate said `opId` holds the cluster, so it says so once per operation. */
  announceHold(cluster: string, opId: string): Promise<void>;
  forget(cluster: string): Promise<void>;
}

const verdictKey = (cluster: string): string => `talos:schedule:gate:${cluster}`;
const countsKey = (cluster: string): string => `talos:schedule:gate-runs:${cluster}`;
const holdKey = (cluster: string): string => `talos:schedule:gate-hold:${cluster}`;

export function createScheduledGateState(redis: Redis): ScheduledGateState {
  return {
    async last(cluster) {
      const raw = await redis.get(verdictKey(cluster));
      if (raw === null) return undefined;
      const value = JSON.parse(raw) as Partial<StoredVerdict>;
      if (typeof value.verdict?.passed !== 'boolean' || !Array.isArray(value.verdict.failing) || typeof value.changedAt !== 'string')
        return undefined;
      return { verdict: value.verdict, changedAt: value.changedAt, lastRunAt: value.lastRunAt ?? value.changedAt };
    },
    async save(cluster, stored) {
      await redis.set(verdictKey(cluster), JSON.stringify(stored));
    },
    async countRun(cluster, passed) {
      const write = redis.multi().hincrby(countsKey(cluster), 'runs', 1);
      if (!passed) write.hincrby(countsKey(cluster), 'failed', 1);
      await write.exec();
    },
    async takeCounts(cluster) {
      const result = await redis.multi().hgetall(countsKey(cluster)).del(countsKey(cluster)).exec();
      const counts = (result?.[0]?.[1] ?? {}) as Record<string, string>;
      return { runs: Number(counts.runs ?? 0), failed: Number(counts.failed ?? 0) };
    },
    async announcedHold(cluster) {
      return (await redis.get(holdKey(cluster))) ?? undefined;
    },
    async announceHold(cluster, opId) {
      await redis.set(holdKey(cluster), opId);
    },
    async forget(cluster) {
      await redis.del(verdictKey(cluster), countsKey(cluster), holdKey(cluster));
    },
  };
}
