import { describe, expect, it } from 'vitest';
import { backupSchedulesGate, type BackupObservations } from '../../../../src/rules/readiness/backup-schedules.ts';

const ok = <T>(value: T) => ({ ok: true as const, value });
const SNAPSHOT = { cron: '0 * * * *', timeZone: 'UTC', keepLast: 48 };

function job(name: string, task: string) {
  return { metadata: { name, namespace: 'longhorn-system' }, spec: { name, task, cron: '0 2 * * *', retain: 14, groups: ['default'] } };
}
function db(name: string, namespace = 'apps') {
  return { metadata: { name, namespace }, spec: { instances: 3 } };
}
function scheduled(name: string, cluster: string, namespace = 'apps', suspend?: boolean) {
  return {
    metadata: { name, namespace },
    spec: { schedule: '0 0 3 * * *', cluster: { name: cluster }, ...(suspend === undefined ? {} : { suspend }) },
  };
}

const ALL: BackupObservations = {
  recurringJobs: ok([job('backup-nightly', 'backup')]),
  cnpgClusters: ok([db('pg')]),
  scheduledBackups: ok([scheduled('pg-nightly', 'pg')]),
};

describe('backupSchedulesGate', () => {
  it('leaves the rest of the table to a person once every schedule it sees is there, with them as evidence', () => {
    const gate = backupSchedulesGate('production', ALL, SNAPSHOT);
    expect(gate.status).toBe('manual');
    expect(gate.summary).toContain('confirm by hand the rest of the ADR 006 backup table');
    expect(gate.evidence).toEqual([
      'etcd snapshots by the bot: 0 * * * * (UTC), keep last 48',
      'Longhorn recurring job backup-nightly: task backup, 0 2 * * *, retain 14, groups default',
      'CloudNativePG apps/pg: ScheduledBackup pg-nightly 0 0 3 * * *',
    ]);
  });

  it('fails without the bot snapshot schedule, naming the inventory field', () => {
    const gate = backupSchedulesGate('production', ALL, undefined);
    expect(gate.status).toBe('failed');
    expect(gate.summary).toBe(
      'the bot takes no scheduled etcd snapshots of production: add schedules.snapshot.cron to its inventory entry',
    );
  });

  it('fails a Longhorn with snapshot jobs only: they stay on the same disks', () => {
    const gate = backupSchedulesGate('production', { ...ALL, recurringJobs: ok([job('snap-hourly', 'snapshot')]) }, SNAPSHOT);
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('Longhorn has no recurring backup job (snap-hourly only snapshots on the same disks)');
    expect(gate.summary).toContain('create a RecurringJob (recurringjobs.longhorn.io) with task: backup');
  });

  it('fails a CloudNativePG Cluster without a scheduled backup, one in another namespace, and a suspended one', () => {
    const gate = backupSchedulesGate(
      'production',
      {
        ...ALL,
        cnpgClusters: ok([db('pg'), db('keycloak', 'auth')]),
        scheduledBackups: ok([scheduled('pg-nightly', 'pg', 'apps', true), scheduled('keycloak-nightly', 'keycloak', 'apps')]),
      },
      SNAPSHOT,
    );
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain(
      'every scheduled backup of CloudNativePG Cluster apps/pg is suspended (pg-nightly): set spec.suspend: false',
    );
    expect(gate.summary).toContain(
      'CloudNativePG Cluster auth/keycloak has no scheduled backup: create a ScheduledBackup (postgresql.cnpg.io/v1) in auth with spec.cluster.name: keycloak',
    );
  });

  it('reads a cluster without Longhorn or CloudNativePG as nothing to schedule there, and fails what it could not read', () => {
    const none = backupSchedulesGate(
      'production',
      { recurringJobs: ok(undefined), cnpgClusters: ok(undefined), scheduledBackups: ok(undefined) },
      SNAPSHOT,
    );
    expect(none.status).toBe('manual');
    expect(none.evidence).toContain('Longhorn: not installed (no recurringjobs.longhorn.io)');
    const unread = backupSchedulesGate('production', { ...ALL, recurringJobs: { ok: false, error: 'forbidden' } }, SNAPSHOT);
    expect(unread.status).toBe('failed');
    expect(unread.summary).toBe("could not read Longhorn's recurring jobs: forbidden");
  });
});
