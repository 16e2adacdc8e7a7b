import { readFileSync } from 'node:fs';
import type { ReadinessProbe } from '../http/ops-endpoints.ts';
import type { Logger } from '../log/logger.ts';
import { runProbes } from '../http/ops-endpoints.ts';
import { createMetrics, sharedRead, type Metrics } from '../metrics/metrics.ts';
import { readClusterHolds, recordOperationChange, waitingApprovalCounts } from '../ops/operation-metrics.ts';
import { readClusterSignals } from '../ops/cluster-signals.ts';
import { OPS_QUEUE, READ_QUEUE } from '../queue/job-schemas.ts';
import type { Infrastructure } from './infrastructure.ts';
import type { OperationRecords } from './operation-records.ts';

/** The metrics, and the readiness probes the `ready` gauge and `/readyz` read at scrape time. */
export interface Observability {
  metrics: Metrics;
  /** Empty until the probes' subjects (Slack, the workers) exist: see `readinessProbes` in main. */
  probes: ReadinessProbe[];
}

/** The bot's version from its package.json (beside src/ in the image too), or `unknown` when it cannot be read. */
function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export function buildMetrics(
  infra: Pick<Infrastructure, 'inventory' | 'queues' | 'epoch' | 'config' | 'clock'>,
  records: Pick<OperationRecords, 'lock' | 'store' | 'events' | 'signals'>,
): Observability {
  const { read, ops } = infra.queues;
  const clusterNames = infra.inventory.clusters.map((c) => c.name);
  const clusterHolds = sharedRead(() =>
    readClusterHolds(
      clusterNames,
      (cluster) => records.lock.holder(cluster),
      (id) => records.store.get(id),
    ),
  );
  // Read at scrape from the snapshot directories and Redis, so every replica shows the same and a restart loses nothing.
  const clusterSignals = sharedRead(() => readClusterSignals(infra.inventory.clusters, records.signals, infra.clock.now()));
  const probes: ReadinessProbe[] = [];
  const metrics = createMetrics({
    queueJobCounts: async () => {
      const states = ['waiting', 'active', 'delayed', 'prioritized', 'failed'] as const;
      const [readCounts, opsCounts] = await Promise.all([read.getJobCounts(...states), ops.getJobCounts(...states)]);
      return { [READ_QUEUE]: readCounts, [OPS_QUEUE]: opsCounts };
    },
    waitingApprovals: async () => waitingApprovalCounts(clusterNames, await clusterHolds()),
    clusterHolds,
    readiness: () => runProbes(probes, 2000, infra.clock),
    redisEpochIntact: () => infra.epoch.check(),
    clusterSignals,
    clock: infra.clock,
    build: {
      version: packageVersion(),
      nodeVersion: process.versions.node,
      ...(infra.config.gitCommit ? { commit: infra.config.gitCommit } : {}),
    },
  });
  records.events.on(recordOperationChange(metrics));
  return { metrics, probes };
}

/** Logs and counts a promise rejection nothing handled; the process carries on (its jobs may be running talosctl or tofu). */
export function unhandledRejectionReporter(metrics: Pick<Metrics, 'unhandledRejections'>, logger: Logger): (reason: unknown) => void {
  return (reason) => {
    metrics.unhandledRejections.inc();
    const err = reason instanceof Error ? reason.message : String(reason);
    logger.error({ err, stack: reason instanceof Error ? reason.stack : undefined }, 'unhandled promise rejection; the bot carries on');
  };
}
