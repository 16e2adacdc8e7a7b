import type { Redis } from 'ioredis';

/** `requestedBy` of a gate the cluster's schedule started: it posts only when its verdict changes. */
export const SCHEDULED_GATE = 'schedule';

/** The health gate that runs on a cluster now. */
export interface RunningGate {
  /** Its job's id. */
  job: string;
  requestedBy: string;
  /** Its root message, once posted. */
  rootTs?: string;
  /** The link to its root message, once someone needed it. */
  link?: string;
}

/**
 * At most one health gate per cluster at a time: a second `/talos health` while one runs joins
 * it instead of asking the cluster everything again. Short-lived on purpose: cleared when the
 * gate ends, and expiring by itself (`ttlMs`) when its replica died before clearing it.
 */
export interface RunningGates {
  /** Makes `gate` the cluster's running gate, or returns the one that runs. A job run again (its lock lapsed) finds its own entry and keeps it. */
  claim(cluster: string, gate: Pick<RunningGate, 'job' | 'requestedBy'>): Promise<{ ok: true } | { ok: false; running: RunningGate }>;
  /** Adds where the gate posted, or its link; only while `job` is the cluster's running gate. */
  note(cluster: string, job: string, patch: Pick<RunningGate, 'rootTs' | 'link'>): Promise<void>;
  get(cluster: string): Promise<RunningGate | undefined>;
  /** Clears the entry, only while `job` holds it. */
  release(cluster: string, job: string): Promise<void>;
}

export interface RunningGatesOptions {
  /** How long an entry outlives a gate whose replica died before clearing it, in ms: longer than a gate can run. */
  ttlMs: number;
}

const key = (cluster: string): string => `talos:health-gate:${cluster}`;

/** SET NX, or refresh the entry of the same job; otherwise return the running gate. */
const CLAIM = `
local current = redis.call('GET', KEYS[1])
if current then
  if cjson.decode(current).job ~= ARGV[1] then return current end
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return false
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return false`;

const NOTE = `
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local gate = cjson.decode(current)
if gate.job ~= ARGV[1] then return 0 end
local patch = cjson.decode(ARGV[2])
for k, v in pairs(patch) do gate[k] = v end
redis.call('SET', KEYS[1], cjson.encode(gate), 'KEEPTTL')
return 1`;

const RELEASE = `
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).job == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

function parse(raw: string | null): RunningGate | undefined {
  if (raw === null) return undefined;
  const value = JSON.parse(raw) as Partial<RunningGate>;
  if (typeof value.job !== 'string' || typeof value.requestedBy !== 'string') return undefined;
  return {
    job: value.job,
    requestedBy: value.requestedBy,
    ...(typeof value.rootTs === 'string' ? { rootTs: value.rootTs } : {}),
    ...(typeof value.link === 'string' ? { link: value.link } : {}),
  };
}

export function createRunningGates(redis: Redis, options: RunningGatesOptions): RunningGates {
  const ttl = String(Math.max(1, Math.round(options.ttlMs)));
  return {
    async claim(cluster, gate) {
      const running = parse(
        (await redis.eval(CLAIM, 1, key(cluster), gate.job, JSON.stringify({ job: gate.job, requestedBy: gate.requestedBy }), ttl)) as
          string | null,
      );
      return running === undefined ? { ok: true } : { ok: false, running };
    },
    async note(cluster, job, patch) {
      const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
      await redis.eval(NOTE, 1, key(cluster), job, JSON.stringify(defined));
    },
    async get(cluster) {
      return parse(await redis.get(key(cluster)));
    },
    async release(cluster, job) {
      await redis.eval(RELEASE, 1, key(cluster), job);
    },
  };
}
