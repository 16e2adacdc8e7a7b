import { Cron } from 'croner';

/** How many upcoming runs are looked at: enough for a weekday-only or monthly pattern to show its longest gap. */
const RUNS = 40;

/**
 * The longest time between two consecutive runs of a cron pattern from `from` on, in seconds, or
 * undefined when it runs fewer than twice more. A weekday-only schedule's gap is the weekend, so an
 * alert on a missed run waits that long on Mondays rather than firing every Sunday.
 */
export function longestCronGapSeconds(pattern: string, timezone: string | undefined, from: Date): number | undefined {
  let runs: Date[];
  try {
    runs = new Cron(pattern, { timezone, paused: true }).nextRuns(RUNS, from);
  } catch {
    return undefined;
  }
  let longest: number | undefined;
  for (let i = 1; i < runs.length; i++) {
    const gap = (runs[i]!.getTime() - runs[i - 1]!.getTime()) / 1000;
    if (longest === undefined || gap > longest) longest = gap;
  }
  return longest;
}
