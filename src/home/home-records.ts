import type { Redis } from 'ioredis';
import { z } from 'zod';

/** What the Home keeps of a cluster's last health gate: the verdict, when, and the versions its nodes reported. */
export const GateRecord = z.object({
  cluster: z.string(),
  passed: z.boolean(),
  /** ISO time the gate started. */
  at: z.string(),
  stopReasons: z.array(z.string()),
  talos: z.array(z.string()),
  kubernetes: z.array(z.string()),
  /** What runs against what Terraform declares (`DeclaredState`), when the gate compared them. */
  declared: z
    .object({ state: z.enum(['match', 'drift', 'off', 'unknown']), lines: z.array(z.string()), fixes: z.array(z.string()) })
    .optional(),
});
export type GateRecord = z.infer<typeof GateRecord>;

export interface HomeRecords {
  /** Keeps the gate as its cluster's last one, unless a gate that started later is already recorded. */
  recordGate(gate: GateRecord): Promise<void>;
  lastGate(cluster: string): Promise<GateRecord | undefined>;
  /** Notes that `user` opened the Home tab at `at`, so changes are pushed to them for a while. */
  opened(user: string, at: Date): Promise<void>;
  /** Users who opened the Home within the viewer window before `now`. */
  recentViewers(now: Date): Promise<string[]>;
}

export interface HomeRecordsOptions {
  /** How long a cluster's last gate is kept, in ms. Default 30 days. */
  gateRetentionMs?: number;
  /** How long after opening the Home a user gets its refreshes, in ms. Default 2 hours. */
  viewerTtlMs?: number;
}

const gateKey = (cluster: string): string => `talos:home:gate:${cluster}`;
const VIEWERS = 'talos:home:viewers';

/** Writes the gate only if none that started later is stored: two gates finishing out of order keep the newer. */
const SET_IF_NEWER = `
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).at > ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return 1`;

export function createHomeRecords(redis: Redis, options: HomeRecordsOptions = {}): HomeRecords {
  const gateRetentionMs = options.gateRetentionMs ?? 30 * 24 * 3600_000;
  const viewerTtlMs = options.viewerTtlMs ?? 2 * 3600_000;
  return {
    async recordGate(gate) {
      const record = GateRecord.parse(gate);
      await redis.eval(SET_IF_NEWER, 1, gateKey(record.cluster), JSON.stringify(record), record.at, String(gateRetentionMs));
    },
    async lastGate(cluster) {
      const raw = await redis.get(gateKey(cluster));
      if (raw === null) return undefined;
      const parsed = GateRecord.safeParse(JSON.parse(raw));
      // A record of another shape (an older version of the bot) is as good as none.
      return parsed.success ? parsed.data : undefined;
    },
    async opened(user, at) {
      const ms = at.getTime();
      await redis
        .multi()
        .zadd(VIEWERS, ms, user)
        .zremrangebyscore(VIEWERS, '-inf', ms - viewerTtlMs)
        .pexpire(VIEWERS, viewerTtlMs)
        .exec();
    },
    async recentViewers(now) {
      return redis.zrangebyscore(VIEWERS, now.getTime() - viewerTtlMs, '+inf');
    },
  };
}
