import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { ClusterConfig } from '../config/inventory.ts';
import type { GateReport } from '../health/health-gate.ts';
import type { DeclaredState } from '../health/rules/declared-versions.ts';
import type { ClusterSignal } from '../metrics/metrics.ts';
import { longestCronGapSeconds } from '../rules/schedule-interval.ts';
import { lastVerifiedSnapshot } from './snapshot-signal.ts';

/** A health gate's verdict as the metrics show it: passed with warnings is `warning`; a gate that could not run is `failed`. */
export type GateVerdictName = 'passed' | 'warning' | 'failed';

/** A finished gate's verdict: failed when it did not pass, warning when it passed with a check in warning. */
export function gateVerdictName(report: Pick<GateReport, 'passed' | 'checks'>): GateVerdictName {
  if (!report.passed) return 'failed';
  return report.checks.some((c) => c.status === 'warning') ? 'warning' : 'passed';
}

/**
 * Who ran a gate: someone's `/talos health`, the cluster's schedule, or an operation (its own gates,
 * its final one included), named by its id and by the title people use.
 */
export const GateOrigin = z.discriminatedUnion('by', [
  z.strictObject({ by: z.literal('command'), user: z.string() }),
  z.strictObject({ by: z.literal('schedule') }),
  z.strictObject({ by: z.literal('operation'), opId: z.string(), title: z.string() }),
]);
export type GateOrigin = z.infer<typeof GateOrigin>;

/** The last health gate of a cluster, in Unix seconds. */
export interface LastGate {
  verdict: GateVerdictName;
  /** Who ran it, when the bot that kept it knew (older records do not say). */
  origin?: GateOrigin;
  /** When the last gate finished. */
  at: number;
  /** When the verdict became what it is: the first gate of a run of equal verdicts. */
  since: number;
}

export interface ClusterSignalsRead {
  gate?: LastGate;
  /** The distinct Talos versions the last gate that read them found on the nodes. */
  talosVersions?: string[];
  /** What the last gate that compared them found of the versions Terraform declares against what runs. */
  declared?: DeclaredState;
}

/**
 * What the metrics tell about each cluster beyond its lock, kept in Redis so that every replica
 * shows the same values and a restart loses none: one hash per cluster name, written when a gate
 * ends. Bounded by the cluster names the inventory ever had; the metrics read only today's.
 */
export interface ClusterSignals {
  gateFinished(
    cluster: string,
    verdict: GateVerdictName,
    at: Date,
    talosVersions?: readonly string[],
    declared?: DeclaredState,
    origin?: GateOrigin,
  ): Promise<void>;
  read(cluster: string): Promise<ClusterSignalsRead>;
}

const key = (cluster: string): string => `talos:signals:${cluster}`;

/** Keeps `since` while the verdict stays the same, in one step, so two replicas ending gates at once cannot reset it. */
const GATE_FINISHED = `
local verdict = redis.call('HGET', KEYS[1], 'gateVerdict')
local since = redis.call('HGET', KEYS[1], 'gateSince')
if verdict ~= ARGV[1] or not since then since = ARGV[2] end
redis.call('HSET', KEYS[1], 'gateVerdict', ARGV[1], 'gateAt', ARGV[2], 'gateSince', since)
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'talosVersions', ARGV[3]) end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'declared', ARGV[4]) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'gateOrigin', ARGV[5]) else redis.call('HDEL', KEYS[1], 'gateOrigin') end
return 1`;

const VERDICTS = new Set<string>(['passed', 'warning', 'failed']);

/** A kept origin, or none when it is missing or not one the bot writes: the gate shows without it. */
function originOf(raw: string | undefined): { origin?: GateOrigin } {
  if (raw === undefined) return {};
  try {
    const parsed = GateOrigin.safeParse(JSON.parse(raw));
    return parsed.success ? { origin: parsed.data } : {};
  } catch {
    return {};
  }
}

export function createClusterSignals(redis: Redis): ClusterSignals {
  return {
    async gateFinished(cluster, verdict, at, talosVersions, declared, origin) {
      // A gate that read no version (its probe got no answer) leaves the last versions read standing.
      const versions = talosVersions !== undefined && talosVersions.length > 0 ? JSON.stringify([...new Set(talosVersions)].sort()) : '';
      // A gate that compared no declared versions (it could not run) leaves the last comparison standing.
      const compared = declared === undefined ? '' : JSON.stringify(declared);
      const by = origin === undefined ? '' : JSON.stringify(GateOrigin.parse(origin));
      await redis.eval(GATE_FINISHED, 1, key(cluster), verdict, String(at.getTime() / 1000), versions, compared, by);
    },
    async read(cluster) {
      const fields = await redis.hgetall(key(cluster));
      const at = Number(fields.gateAt);
      const since = Number(fields.gateSince);
      const gate =
        fields.gateVerdict !== undefined && VERDICTS.has(fields.gateVerdict) && Number.isFinite(at) && Number.isFinite(since)
          ? { verdict: fields.gateVerdict as GateVerdictName, at, since, ...originOf(fields.gateOrigin) }
          : undefined;
      let talosVersions: string[] | undefined;
      try {
        const parsed: unknown = fields.talosVersions === undefined ? undefined : JSON.parse(fields.talosVersions);
        if (Array.isArray(parsed) && parsed.every((v) => typeof v === 'string')) talosVersions = parsed;
      } catch {
        // An unreadable value shows as no versions, never as a failed scrape.
      }
      let declared: DeclaredState | undefined;
      try {
        const parsed = fields.declared === undefined ? undefined : (JSON.parse(fields.declared) as Partial<DeclaredState>);
        if (parsed !== undefined && typeof parsed.state === 'string' && Array.isArray(parsed.lines) && Array.isArray(parsed.fixes))
          declared = parsed as DeclaredState;
      } catch {
        // As above: unreadable is unknown.
      }
      return { ...(gate ? { gate } : {}), ...(talosVersions ? { talosVersions } : {}), ...(declared ? { declared } : {}) };
    },
  };
}

/** Each cluster's signals for the scrape-time gauges: its snapshot directory, its schedule, and what Redis keeps of its gates. */
export function readClusterSignals(
  clusters: readonly Pick<ClusterConfig, 'name' | 'snapshotDir' | 'schedules'>[],
  signals: Pick<ClusterSignals, 'read'>,
  now: Date,
): Promise<ClusterSignal[]> {
  return Promise.all(
    clusters.map(async (cluster): Promise<ClusterSignal> => {
      const schedule = cluster.schedules?.snapshot;
      const [lastSnapshotAt, kept] = await Promise.all([
        lastVerifiedSnapshot(cluster.name, cluster.snapshotDir),
        signals.read(cluster.name),
      ]);
      const interval = schedule === undefined ? undefined : longestCronGapSeconds(schedule.cron, schedule.timeZone, now);
      return {
        cluster: cluster.name,
        ...(lastSnapshotAt === undefined ? {} : { lastSnapshotAt }),
        ...(interval === undefined ? {} : { snapshotIntervalSeconds: interval }),
        ...(kept.gate ? { gate: kept.gate } : {}),
        ...(kept.talosVersions ? { talosVersions: kept.talosVersions.length } : {}),
      };
    }),
  );
}
