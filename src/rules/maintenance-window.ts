import { windowSchedule, type DeclaredWindows, type MaintenanceWindow } from '../config/maintenance-window.ts';

export type WindowStatus = { inside: true; endsAt: Date } | { inside: false; nextStart: Date | undefined };

/** Whether `now` falls inside one of the windows, and when it ends or the next one starts. */
export function windowStatus(windows: readonly MaintenanceWindow[], now: Date): WindowStatus {
  let nextStart: Date | undefined;
  for (const window of windows) {
    const schedule = windowSchedule(window);
    // The latest start at or before now; a start exactly now counts as inside.
    const previous = schedule.previousRuns(1, new Date(now.getTime() + 1))[0];
    if (previous !== undefined) {
      const endsAt = new Date(previous.getTime() + window.durationMinutes * 60_000);
      if (now.getTime() < endsAt.getTime()) return { inside: true, endsAt };
    }
    const next = schedule.nextRun(now) ?? undefined;
    if (next !== undefined && (nextStart === undefined || next < nextStart)) nextStart = next;
  }
  return { inside: false, nextStart };
}

export interface WindowPolicy {
  environment: 'staging' | 'production';
  maintenanceWindows: DeclaredWindows;
  allowOutsideWindows: boolean;
}

/**
 * Why a production change is refused now: no window is open, and when the next one opens (undefined
 * when none will); or production declares no window at all (`undeclared`), so it takes no change until one is.
 */
export interface OutsideWindow {
  nextStart: Date | undefined;
  undeclared?: true;
}

/**
 * The runbook promotes changes "to production during a maintenance window". A production
 * cluster refuses mutating operations outside its declared windows, unless its inventory allows
 * it; one that declares no window refuses them all until it declares one, or declares `always`
 * (any time). Staging is not restricted. The sentence an operator reads is the presenter's
 * (src/chat/window-refusal.ts).
 */
export function outsideWindow(cluster: WindowPolicy, now: Date): OutsideWindow | undefined {
  if (cluster.environment !== 'production' || cluster.maintenanceWindows === 'always') return undefined;
  if (cluster.maintenanceWindows.length === 0) return { nextStart: undefined, undeclared: true };
  if (cluster.allowOutsideWindows) return undefined;
  const status = windowStatus(cluster.maintenanceWindows, now);
  return status.inside ? undefined : { nextStart: status.nextStart };
}
