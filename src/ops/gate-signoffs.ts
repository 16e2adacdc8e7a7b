import type { Redis } from 'ioredis';
import { z } from 'zod';
import { ClusterShape, GateSignOff } from '../rules/gate-signoff.ts';

/** The latest `/talos gates` report of a cluster: what its [Sign off] buttons may sign, and the shape they sign for. */
export const GatesReport = z.object({
  /** The report's job id: a button of an older report is stale. */
  job: z.string().min(1).max(200),
  checkedAt: z.iso.datetime(),
  shape: ClusterShape,
  /** The gates that waited for a person in that report. */
  byHand: z.array(z.string().regex(/^[a-z0-9-]{1,64}$/)).max(50),
});
export type GatesReport = z.infer<typeof GatesReport>;

/** Sign-offs that did not read back as one (an older or damaged record): left out of the verdict, and said. */
export interface SignOffsRead {
  given: GateSignOff[];
  unreadable: string[];
}

/**
 * The approvers' sign-offs of each cluster's by-hand gates, one per gate, kept in Redis beside the
 * operations. Bounded: a field per gate a report listed as by-hand, evidence of at most 500
 * characters, and the key expires once its newest sign-off has aged out.
 */
export interface GateSignOffStore {
  saveReport(cluster: string, report: GatesReport): Promise<void>;
  latestReport(cluster: string): Promise<GatesReport | undefined>;
  list(cluster: string): Promise<SignOffsRead>;
  /**
   * Records `signOff` when the gate's stored sign-off is still the one the caller judged
   * (`expected`, the raw value or undefined for none); false, changing nothing, when it is not.
   */
  record(signOff: GateSignOff, expected: string | undefined, keepMs: number): Promise<boolean>;
  /** The stored raw value of a gate's sign-off, for `record`'s compare. */
  raw(cluster: string, gate: string): Promise<string | undefined>;
}

const reportKey = (cluster: string): string => `talos:gates-report:${cluster}`;
const signOffKey = (cluster: string): string => `talos:signoffs:${cluster}`;

// One compare-and-set: a second click, or two approvers at once, finds the first one's record and changes nothing.
const RECORD_IF_UNCHANGED = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if (current or '') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`;

export function createGateSignOffStore(redis: Redis): GateSignOffStore {
  return {
    async saveReport(cluster, report) {
      await redis.set(reportKey(cluster), JSON.stringify(GatesReport.parse(report)));
    },
    async latestReport(cluster) {
      const raw = await redis.get(reportKey(cluster));
      if (raw === null) return undefined;
      try {
        const parsed = GatesReport.safeParse(JSON.parse(raw));
        return parsed.success ? parsed.data : undefined;
      } catch {
        return undefined;
      }
    },
    async list(cluster) {
      const fields = await redis.hgetall(signOffKey(cluster));
      const given: GateSignOff[] = [];
      const unreadable: string[] = [];
      for (const [gate, raw] of Object.entries(fields)) {
        let parsed: ReturnType<typeof GateSignOff.safeParse> | undefined;
        try {
          parsed = GateSignOff.safeParse(JSON.parse(raw));
        } catch {
          parsed = undefined;
        }
        // A record whose gate or cluster is not its key's is no sign-off of this gate.
        if (parsed?.success === true && parsed.data.gate === gate && parsed.data.cluster === cluster) given.push(parsed.data);
        else unreadable.push(gate);
      }
      return { given, unreadable };
    },
    async record(signOff, expected, keepMs) {
      const value = JSON.stringify(GateSignOff.parse(signOff));
      const done = await redis.eval(
        RECORD_IF_UNCHANGED,
        1,
        signOffKey(signOff.cluster),
        signOff.gate,
        expected ?? '',
        value,
        String(keepMs),
      );
      return done === 1;
    },
    async raw(cluster, gate) {
      return (await redis.hget(signOffKey(cluster), gate)) ?? undefined;
    },
  };
}
