import { Cron } from 'croner';
import { z } from 'zod';

/**
 * Why a cron pattern cannot be scheduled in `timezone`, or undefined when it can. Croner reads
 * 5 fields (minute first) or 6 (seconds first), the same grammar BullMQ's job schedulers take.
 */
export function cronProblem(pattern: string, timezone: string | undefined): string | undefined {
  try {
    const next = new Cron(pattern, { timezone, paused: true }).nextRun(new Date());
    if (next === null) return `"${pattern}" never fires again`;
    return undefined;
  } catch (error) {
    return `"${pattern}"${timezone === undefined ? '' : ` in ${timezone}`}: ${(error as Error).message.split('. ')[0]}`;
  }
}

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** An IANA zone name Intl knows, e.g. `Europe/Berlin`. */
const TimeZone = z.string().refine(isTimeZone, { message: 'must be an IANA time zone such as Europe/Berlin or UTC' });

/** `HH:MM`, 24-hour clock. */
const ClockTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day as HH:MM, e.g. 08:00');

/**
 * The zone of a schedule, spelled `timeZone` as a maintenance window spells it. The lower-case
 * `timezone` of earlier releases is still read, for one release, and warned about at start.
 */
const zoneFields = {
  /** IANA zone of the schedule's times; default UTC. */
  timeZone: TimeZone.optional().describe("IANA zone of the schedule's times, e.g. Europe/Berlin; default UTC."),
  /** The old spelling of `timeZone`, read for one more release. */
  timezone: TimeZone.optional().meta({ deprecated: true, description: 'Old spelling of timeZone; write timeZone.' }),
};

function oneZone(ctx: { value: { timeZone?: string | undefined; timezone?: string | undefined }; issues: z.core.$ZodRawIssue[] }): void {
  if (ctx.value.timeZone !== undefined && ctx.value.timezone !== undefined) {
    ctx.issues.push({
      code: 'custom',
      input: ctx.value.timezone,
      path: ['timezone'],
      message: 'the zone is given twice: keep timeZone and remove timezone (its old spelling)',
    });
  }
}

/** The schedule with its zone under the one name the rest of the bot reads, `timeZone` (default UTC). */
function settleZone<T extends { timeZone?: string | undefined; timezone?: string | undefined }>(
  s: T,
): Omit<T, 'timezone' | 'timeZone'> & { timeZone: string } {
  const { timezone, timeZone, ...rest } = s;
  return { ...rest, timeZone: timeZone ?? timezone ?? 'UTC' };
}

const HealthGateSchedule = z
  .strictObject({
    /** When the gate runs, e.g. `*\/15 * * * *` (every quarter hour). */
    cron: z
      .string()
      .min(1)
      .describe(
        'When the health gate runs on its own, e.g. `*/15 * * * *` (every quarter hour); a change of verdict is posted to the channel.',
      ),
    ...zoneFields,
    /** Time of day (in `timeZone`) of a summary of the scheduled gates: verdict, last change, number of runs. Unset: no summary. */
    dailySummary: ClockTime.optional().describe(
      'Time of day (HH:MM in timeZone) of a summary of the scheduled gates in the channel: verdict, last change, number of runs. Unset: no summary.',
    ),
  })
  .check(oneZone)
  .transform(settleZone);

const SnapshotSchedule = z
  .strictObject({
    /** When a snapshot is taken, e.g. `0 * * * *` (hourly). */
    cron: z.string().min(1).describe('When an etcd snapshot is taken into snapshotDir, e.g. `0 * * * *` (hourly).'),
    ...zoneFields,
    /** Keep the newest N snapshots. */
    keepLast: z.number().int().min(1).optional().describe('Keep the newest N snapshots; older scheduled ones are deleted.'),
    /** Keep snapshots taken within the last N days. With `keepLast` too, a snapshot either rule keeps stays. */
    keepDays: z
      .number()
      .positive()
      .optional()
      .describe('Keep snapshots taken within the last N days. With keepLast too, a snapshot either rule keeps stays.'),
  })
  .check(oneZone)
  .refine((s) => s.keepLast !== undefined || s.keepDays !== undefined, {
    message: 'say how many snapshots to keep: keepLast (the newest N), keepDays (the last N days), or both',
  })
  .transform(settleZone);

/** What runs on its own for a cluster: the health gate and etcd snapshots, each optional. */
export const ClusterSchedules = z
  .strictObject({
    healthGate: HealthGateSchedule.optional().describe('The health gate on a schedule.'),
    snapshot: SnapshotSchedule.optional().describe('etcd snapshots on a schedule, with their retention.'),
  })
  .check((ctx) => {
    for (const name of ['healthGate', 'snapshot'] as const) {
      const schedule = ctx.value[name];
      if (schedule === undefined) continue;
      // A bad zone is reported on its own line; the pattern is then judged in UTC.
      const problem = cronProblem(schedule.cron, isTimeZone(schedule.timeZone) ? schedule.timeZone : undefined);
      if (problem !== undefined)
        ctx.issues.push({ code: 'custom', input: schedule.cron, path: [name, 'cron'], message: `not a usable cron pattern: ${problem}` });
    }
  });
export type ClusterSchedules = z.infer<typeof ClusterSchedules>;
export type HealthGateSchedule = z.infer<typeof HealthGateSchedule>;
export type SnapshotSchedule = z.infer<typeof SnapshotSchedule>;

/** The daily summary's time as a cron pattern (`MM HH * * *`), read in the gate's time zone. */
export function dailySummaryCron(time: string): string {
  const [hours, minutes] = time.split(':');
  return `${Number(minutes)} ${Number(hours)} * * *`;
}
