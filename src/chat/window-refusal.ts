import { outsideWindow, type WindowPolicy } from '../rules/maintenance-window.ts';
import { formatTime } from './blocks.ts';

/**
 * The refusal of a production change outside the maintenance windows, as the operator reads it
 * (see `outsideWindow` for when it applies); undefined when the change may go ahead.
 */
export function outsideWindowRefusal(cluster: WindowPolicy, now: Date): string | undefined {
  const refusal = outsideWindow(cluster, now);
  if (refusal === undefined) return undefined;
  if (refusal.undeclared === true)
    return 'Production changes are taken only inside a maintenance window, and this cluster declares none, so it takes no change. Declare `maintenanceWindows` in the inventory (or `maintenanceWindows: always` to take changes at any time) and run the command again.';
  const next = refusal.nextStart ? ` The next window opens ${formatTime(refusal.nextStart)}.` : '';
  return `Production changes are taken only inside a maintenance window, and none is open now.${next} (The inventory's allowOutsideWindows permits exceptions.)`;
}
