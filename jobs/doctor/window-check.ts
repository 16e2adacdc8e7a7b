import type { DoctorFinding } from '../../src/chat/doctor-report.ts';
import { formatTime } from '../../src/chat/blocks.ts';
import type { ClusterConfig } from '../../src/config/inventory.ts';
import { windowStatus } from '../../src/rules/maintenance-window.ts';

/** The maintenance windows as the bot reads them: open now, or when the next opens, in the reader's own time zone (Slack's date token). */
export function windowCheck(cluster: ClusterConfig, now: Date): DoctorFinding[] {
  const base = { check: 'Maintenance windows', cluster: cluster.name };
  if (cluster.maintenanceWindows === 'always') {
    if (cluster.environment !== 'production') return [{ ...base, status: 'ok', found: '`always`; staging is not restricted to windows' }];
    return [
      {
        ...base,
        status: 'warn',
        found: '`always`: production changes are taken at any time, with no window',
        fix: 'declare `maintenanceWindows` (a cron start, a duration and a time zone each) so production changes wait for a window',
      },
    ];
  }
  const windows = cluster.maintenanceWindows;
  if (windows.length === 0) {
    if (cluster.environment !== 'production')
      return [{ ...base, status: 'ok', found: 'none declared; staging is not restricted to windows' }];
    return [
      {
        ...base,
        status: 'fail',
        found: 'none declared, so production refuses every mutating operation',
        fix: 'declare `maintenanceWindows` in the inventory, or `maintenanceWindows: always` to take changes at any time',
      },
    ];
  }
  const declared = windows.map((w) => `\`${w.start}\` ${w.timeZone} for ${w.durationMinutes} min`).join('; ');
  const status = windowStatus(windows, now);
  if (status.inside) return [{ ...base, status: 'ok', found: `a window is open now, until ${formatTime(status.endsAt)} (${declared})` }];
  if (status.nextStart === undefined) {
    return [
      {
        ...base,
        status: 'fail',
        found: `no window will ever open (${declared})`,
        fix: 'correct the cron expressions of `maintenanceWindows`',
      },
    ];
  }
  const bypass =
    cluster.environment !== 'production'
      ? '; staging is not held to them'
      : cluster.allowOutsideWindows
        ? '; allowOutsideWindows lets changes through outside them'
        : '';
  return [{ ...base, status: 'ok', found: `next window opens ${formatTime(status.nextStart)} (${declared})${bypass}` }];
}
