/** The backup schedules a simulated cluster starts with. */
import type { ClusterShape, RecurringJobState, ScheduledBackupState } from './types.ts';

/**
 * What a cluster run as the runbook says has scheduled: a nightly Longhorn backup of every volume
 * (the `default` group), and a nightly backup of each CloudNativePG Cluster.
 */
export function seedBackupSchedules(shape: ClusterShape): { recurringJobs: RecurringJobState[]; scheduledBackups: ScheduledBackupState[] } {
  return {
    recurringJobs: shape.longhorn ? [{ name: 'backup-nightly', task: 'backup', cron: '0 2 * * *', retain: 14, groups: ['default'] }] : [],
    scheduledBackups: (shape.cnpg ?? []).map((db) => ({
      name: `${db.name}-nightly`,
      namespace: db.namespace,
      cluster: db.name,
      schedule: '0 0 3 * * *',
    })),
  };
}
