import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Values read from Redis on every scrape; a scrape should not wait on a Redis that is gone. */
export interface MetricSources {
  /** Job counts of each queue by BullMQ state, e.g. `{ 'talos-ops': { waiting: 1, active: 0 } }`. */
  queueJobCounts?: () => Promise<Record<string, Record<string, number>>>;
  /** Operations in `awaiting-approval`, by cluster. */
  waitingApprovals?: () => Promise<Record<string, number>>;
  /** Upper bound of one source read during a scrape, in ms; default 2000. */
  sourceTimeoutMs?: number;
}

/** The bot's instruments; handed out one at a time by the composition root, never imported by jobs. */
export interface Metrics {
  registry: Registry;
  /** Operations that ended, by kind and result (`completed`, `failed`, `cancelled`, `refused`). */
  operations: Counter<'kind' | 'result'>;
  /** Wall time of a finished step (start to end, restarts included), by step kind and final status. */
  stepDuration: Histogram<'kind' | 'status'>;
  queueJobs: Gauge<'queue' | 'state'>;
  waitingApprovals: Gauge<'cluster'>;
  /** Every talosctl and tofu child process, by binary and subcommand. */
  execDuration: Histogram<'binary' | 'subcommand'>;
  execFailures: Counter<'binary' | 'subcommand' | 'code'>;
  slackApiErrors: Counter<'method' | 'error'>;
  slackRateLimited: Counter<'method'>;
  healthGates: Counter<'cluster' | 'result'>;
  healthChecks: Counter<'check' | 'status'>;
}

const PREFIX = 'talos_chatops_';

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A private registry with every instrument of the bot. Nothing is registered globally,
 * so two bots in one process (or one test after another) never share counters.
 */
export function createMetrics(sources: MetricSources = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const sourceTimeoutMs = sources.sourceTimeoutMs ?? 2000;
  collectDefaultMetrics({ register: registry, prefix: PREFIX });

  const queueJobs = new Gauge({
    name: `${PREFIX}queue_jobs`,
    help: 'Jobs in each BullMQ queue by state, read at scrape time.',
    labelNames: ['queue', 'state'] as const,
    registers,
    async collect() {
      if (!sources.queueJobCounts) return;
      // Reset first: when Redis does not answer, the series disappear instead of showing stale counts.
      this.reset();
      const counts = await withTimeout(sources.queueJobCounts(), sourceTimeoutMs).catch(() => undefined);
      for (const [queue, byState] of Object.entries(counts ?? {})) {
        for (const [state, count] of Object.entries(byState)) this.set({ queue, state }, count);
      }
    },
  });

  const waitingApprovals = new Gauge({
    name: `${PREFIX}waiting_approvals`,
    help: 'Operations waiting for an approver, by cluster, read at scrape time.',
    labelNames: ['cluster'] as const,
    registers,
    async collect() {
      if (!sources.waitingApprovals) return;
      this.reset();
      const byCluster = await withTimeout(sources.waitingApprovals(), sourceTimeoutMs).catch(() => undefined);
      for (const [cluster, count] of Object.entries(byCluster ?? {})) this.set({ cluster }, count);
    },
  });

  return {
    registry,
    operations: new Counter({
      name: `${PREFIX}operations_total`,
      help: 'Operations that ended, by kind and result.',
      labelNames: ['kind', 'result'] as const,
      registers,
    }),
    stepDuration: new Histogram({
      name: `${PREFIX}step_duration_seconds`,
      help: 'Wall time of finished operation steps, by step kind and final status.',
      labelNames: ['kind', 'status'] as const,
      // From a skipped node (seconds) to a control plane that reboots slowly (tens of minutes).
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600],
      registers,
    }),
    queueJobs,
    waitingApprovals,
    execDuration: new Histogram({
      name: `${PREFIX}exec_duration_seconds`,
      help: 'Duration of talosctl and tofu calls, by binary and subcommand.',
      labelNames: ['binary', 'subcommand'] as const,
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800],
      registers,
    }),
    execFailures: new Counter({
      name: `${PREFIX}exec_failures_total`,
      help: 'talosctl and tofu calls that failed, timed out or were cancelled, by binary, subcommand and error code.',
      labelNames: ['binary', 'subcommand', 'code'] as const,
      registers,
    }),
    slackApiErrors: new Counter({
      name: `${PREFIX}slack_api_errors_total`,
      help: 'Slack Web API calls that failed after their retries, by method and error.',
      labelNames: ['method', 'error'] as const,
      registers,
    }),
    slackRateLimited: new Counter({
      name: `${PREFIX}slack_rate_limited_total`,
      help: 'Slack Web API answers of 429 (rate limited), by method.',
      labelNames: ['method'] as const,
      registers,
    }),
    healthGates: new Counter({
      name: `${PREFIX}health_gates_total`,
      help: 'Health gates of /talos health, by cluster and result (passed, failed, error when the gate could not run).',
      labelNames: ['cluster', 'result'] as const,
      registers,
    }),
    healthChecks: new Counter({
      name: `${PREFIX}health_checks_total`,
      help: 'Checks of /talos health gates, by check and status.',
      labelNames: ['check', 'status'] as const,
      registers,
    }),
  };
}
