import { z } from 'zod';
import type { CustomObject } from '../../kube/kube-api.ts';
import type { Observed, ReadinessGate } from '../gate-result.ts';

/**
 * Longhorn's recurring-job tasks that copy a volume to the backup target (longhorn/longhorn-manager
 * k8s/pkg/apis/longhorn/v1beta2/recurringjob.go, v1.12.1). A `snapshot` job keeps its copies on the
 * same disks as the volume, so it is no backup.
 */
const BACKUP_TASKS = ['backup', 'backup-force-create'];

const RecurringJob = z.object({
  metadata: z.object({ name: z.string() }),
  spec: z.object({ task: z.string(), cron: z.string(), retain: z.number().optional(), groups: z.array(z.string()).optional() }),
});

/** `spec.cluster.name` names a Cluster in the ScheduledBackup's own namespace (cloudnative-pg api/v1/scheduledbackup_types.go, v1.30.0). */
const ScheduledBackup = z.object({
  metadata: z.object({ name: z.string(), namespace: z.string().optional() }),
  spec: z.object({ schedule: z.string(), cluster: z.object({ name: z.string() }), suspend: z.boolean().optional() }),
});

const Named = z.object({ metadata: z.object({ name: z.string(), namespace: z.string().optional() }) });

export interface BackupObservations {
  /** `recurringjobs.longhorn.io`; `undefined` without Longhorn. */
  recurringJobs: Observed<CustomObject[] | undefined>;
  /** `clusters.postgresql.cnpg.io`; `undefined` without CloudNativePG. */
  cnpgClusters: Observed<CustomObject[] | undefined>;
  /** `scheduledbackups.postgresql.cnpg.io`; `undefined` without CloudNativePG. */
  scheduledBackups: Observed<CustomObject[] | undefined>;
}

/** The bot's own etcd snapshot schedule for the cluster (inventory `schedules.snapshot`). */
export interface BotSnapshotSchedule {
  cron: string;
  timeZone: string;
  keepLast?: number | undefined;
}

/**
 * The runbook: "Schedule every backup in the ADR 006 backup table." The bot checks what it can see:
 * its own etcd snapshot schedule, a Longhorn recurring job that backs volumes up, and a scheduled
 * backup of every CloudNativePG Cluster. Any of them missing fails the gate, naming what to add;
 * with all of them there, the rest of the table (what Kubernetes does not show) stays with a person.
 */
export function backupSchedulesGate(
  cluster: string,
  observed: BackupObservations,
  snapshot: BotSnapshotSchedule | undefined,
): ReadinessGate {
  const id = 'backups-scheduled';
  const title = 'Every ADR 006 backup scheduled';
  const problems: string[] = [];
  const evidence: string[] = [];

  if (snapshot === undefined) {
    evidence.push('etcd snapshots by the bot: <no schedule>');
    problems.push(`the bot takes no scheduled etcd snapshots of ${cluster}: add schedules.snapshot.cron to its inventory entry`);
  } else {
    evidence.push(
      `etcd snapshots by the bot: ${snapshot.cron} (${snapshot.timeZone})${snapshot.keepLast === undefined ? '' : `, keep last ${snapshot.keepLast}`}`,
    );
  }

  const jobs = observed.recurringJobs;
  if (!jobs.ok) problems.push(`could not read Longhorn's recurring jobs: ${jobs.error}`);
  else if (jobs.value === undefined) evidence.push('Longhorn: not installed (no recurringjobs.longhorn.io)');
  else {
    const parsed = jobs.value.flatMap((o) => {
      const r = RecurringJob.safeParse(o);
      return r.success ? [r.data] : [];
    });
    for (const job of parsed)
      evidence.push(
        `Longhorn recurring job ${job.metadata.name}: task ${job.spec.task}, ${job.spec.cron}, retain ${job.spec.retain ?? '?'}, groups ${(job.spec.groups ?? []).join(', ') || '<none>'}`,
      );
    if (!parsed.some((job) => BACKUP_TASKS.includes(job.spec.task))) {
      const snapshots = parsed.filter((job) => job.spec.task.startsWith('snapshot')).map((job) => job.metadata.name);
      problems.push(
        `Longhorn has no recurring backup job${snapshots.length > 0 ? ` (${snapshots.join(', ')} only snapshot${snapshots.length === 1 ? 's' : ''} on the same disks)` : ''}: create a RecurringJob (recurringjobs.longhorn.io) with task: backup in the default group`,
      );
    }
  }

  const dbs = observed.cnpgClusters;
  const scheduled = observed.scheduledBackups;
  if (!dbs.ok) problems.push(`could not read CloudNativePG's Clusters: ${dbs.error}`);
  else if (!scheduled.ok) problems.push(`could not read CloudNativePG's scheduled backups: ${scheduled.error}`);
  else if (dbs.value === undefined) evidence.push('CloudNativePG: not installed (no clusters.postgresql.cnpg.io)');
  else {
    const backups = (scheduled.value ?? []).flatMap((o) => {
      const r = ScheduledBackup.safeParse(o);
      return r.success ? [r.data] : [];
    });
    for (const object of dbs.value) {
      const db = Named.safeParse(object);
      if (!db.success) continue;
      const namespace = db.data.metadata.namespace ?? 'default';
      const label = `${namespace}/${db.data.metadata.name}`;
      const own = backups.filter((b) => (b.metadata.namespace ?? 'default') === namespace && b.spec.cluster.name === db.data.metadata.name);
      const active = own.filter((b) => b.spec.suspend !== true);
      for (const b of own)
        evidence.push(
          `CloudNativePG ${label}: ScheduledBackup ${b.metadata.name} ${b.spec.schedule}${b.spec.suspend === true ? ' (suspended)' : ''}`,
        );
      if (own.length === 0) {
        evidence.push(`CloudNativePG ${label}: <no ScheduledBackup>`);
        problems.push(
          `CloudNativePG Cluster ${label} has no scheduled backup: create a ScheduledBackup (postgresql.cnpg.io/v1) in ${namespace} with spec.cluster.name: ${db.data.metadata.name}`,
        );
      } else if (active.length === 0) {
        problems.push(
          `every scheduled backup of CloudNativePG Cluster ${label} is suspended (${own.map((b) => b.metadata.name).join(', ')}): set spec.suspend: false`,
        );
      }
    }
  }

  if (problems.length > 0) return { id, title, status: 'failed', summary: problems.join('; '), evidence };
  return {
    id,
    title,
    status: 'manual',
    summary:
      'the bot sees its etcd snapshot schedule and every backup schedule Kubernetes shows (evidence below): confirm by hand the rest of the ADR 006 backup table, the backups Kubernetes cannot show (a Proxmox disk with backup = true is only eligible for backup, it creates no backup job)',
    evidence,
  };
}
