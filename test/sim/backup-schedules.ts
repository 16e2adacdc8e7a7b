/**
 * The backup schedules the cluster's Kubernetes API shows: Longhorn's recurring jobs and
 * CloudNativePG's scheduled backups.
 */
import { meta } from './kube-objects.ts';
import type { SimCluster } from './types.ts';

type Json = Record<string, unknown>;

/**
 * `recurringjobs.longhorn.io`: cluster-wide jobs in `longhorn-system`, `spec.concurrency` defaulted
 * to 1 and `spec.labels`/`parameters` left out as Longhorn does when none are given; the status
 * names the manager that owns the job (recurringjob.go `RecurringJobStatus`).
 */
export function renderRecurringJobs(cluster: SimCluster): Json[] {
  return (cluster.kube.recurringJobs ?? []).map((job) => ({
    apiVersion: 'longhorn.io/v1beta2',
    kind: 'RecurringJob',
    metadata: meta(cluster, 'RecurringJob', job.name, 'longhorn-system', cluster.createdAt, { generation: 1 }),
    spec: { name: job.name, task: job.task, cron: job.cron, retain: job.retain, concurrency: 1, groups: job.groups },
    status: { ownerID: cluster.nodes[0]?.hostname ?? '', executionCount: 0 },
  }));
}

/** `scheduledbackups.postgresql.cnpg.io`, with the next run CloudNativePG's controller writes into the status. */
export function renderScheduledBackups(cluster: SimCluster): Json[] {
  return (cluster.kube.scheduledBackups ?? []).map((b) => ({
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'ScheduledBackup',
    metadata: meta(cluster, 'ScheduledBackup', b.name, b.namespace, cluster.createdAt, { generation: 1 }),
    spec: { schedule: b.schedule, cluster: { name: b.cluster }, ...(b.suspend === undefined ? {} : { suspend: b.suspend }) },
    status: {},
  }));
}
