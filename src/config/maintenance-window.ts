import { Cron } from 'croner';

/** A declared maintenance window, as the inventory writes it. */
export interface MaintenanceWindow {
  /** Cron expression of the window's start, e.g. `0 22 * * 2` for Tuesdays 22:00. */
  start: string;
  /** Length of the window in minutes. */
  durationMinutes: number;
  /** IANA time zone the cron expression is read in, e.g. `Europe/Berlin`. */
  timeZone: string;
}

/** A cluster's windows as the inventory declares them: a list, or `always` (changes at any time). */
export type DeclaredWindows = readonly MaintenanceWindow[] | 'always';

/** The windows a declaration lists: none for `always`. */
export function declaredWindows(declared: DeclaredWindows): readonly MaintenanceWindow[] {
  return declared === 'always' ? [] : declared;
}

/** The window's start times, read in its time zone; paused, so reading it schedules nothing. */
export function windowSchedule(window: MaintenanceWindow): Cron {
  return new Cron(window.start, { timezone: window.timeZone, paused: true });
}

/** Why a declared window is unusable (a bad cron expression or time zone), or undefined when it is fine. */
export function windowProblem(window: MaintenanceWindow): string | undefined {
  try {
    windowSchedule(window).nextRun(new Date());
    return undefined;
  } catch (error) {
    return (error as Error).message.split('. ')[0];
  }
}
