import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { systemClock, type Clock } from '../time/clock.ts';
import { withDeadline } from '../time/deadline.ts';

/** Values read from Redis on every scrape; a scrape should not wait on a Redis that is gone. */
export interface MetricSources {
  /** Job counts of each queue by BullMQ state, e.g. `{ 'talos-ops': { waiting: 1, active: 0 } }`. */
  queueJobCounts?: () => Promise<Record<string, Record<string, number>>>;
  /** Operations in `awaiting-approval`, by cluster. */
  waitingApprovals?: () => Promise<Record<string, number>>;
  /** The operation holding each locked cluster, for the lock and approval age gauges. */
  clusterHolds?: () => Promise<ClusterHold[]>;
  /** The result of each `/readyz` probe, by probe name. */
  readiness?: () => Promise<Record<string, boolean>>;
  /** Whether the epoch the bot adopted at start is still in Redis (false once Redis lost its data). */
  redisEpochIntact?: () => Promise<boolean>;
  /** What the bot knows of each cluster of the inventory beyond its lock: snapshots, the last gate, the Talos versions. */
  clusterSignals?: () => Promise<ClusterSignal[]>;
  /** What `talos_chatops_build_info` shows; without it, the version reads `unknown`. */
  build?: BuildInfo;
  /** Upper bound of one source read during a scrape, in ms; default 2000. */
  sourceTimeoutMs?: number;
  /** The clock the sources' bound runs on; default the system's. */
  clock?: Pick<Clock, 'sleep'>;
}

/** A locked cluster and what its lock holder is doing, as the scrape-time gauges show it. */
export interface ClusterHold {
  cluster: string;
  kind: string;
  /** The holding operation's state (`running`, `awaiting-approval`, `failed`, …). */
  state: string;
  /** When the holder took the cluster (it started, or it was requested when it starts with its request), in Unix seconds. */
  lockedSince: number;
  /** The oldest approval request the holder waits on, in Unix seconds; only while it is `awaiting-approval`. */
  approvalRequestedAt?: number;
}

/** One cluster's signals at scrape time, each in Unix seconds; a field is absent when the bot knows nothing of it. */
export interface ClusterSignal {
  cluster: string;
  /** When the newest verified etcd snapshot in its snapshotDir was taken. */
  lastSnapshotAt?: number;
  /** The longest time between two runs of its snapshot schedule; absent without a schedule. */
  snapshotIntervalSeconds?: number;
  /** The last health gate: its verdict (`passed`, `warning`, `failed`), when it ended, and since when the verdict holds. */
  gate?: { verdict: string; at: number; since: number };
  /** How many distinct Talos versions the last gate that read them found on its nodes. */
  talosVersions?: number;
}

export interface BuildInfo {
  version: string;
  nodeVersion: string;
  /** The commit the image was built from, when the build said. */
  commit?: string;
}

/** Holder states in which an operation has stopped and waits for a person while it keeps the cluster. */
const STOPPED_STATES = new Set(['failed', 'paused']);

/** The bot's instruments; handed out one at a time by the composition root, never imported by jobs. */
export interface Metrics {
  registry: Registry;
  /** Operations that ended, by cluster, kind and result (`completed`, `failed`, `cancelled`, `refused`). */
  operations: Counter<'talos_cluster' | 'kind' | 'result'>;
  /** Wall time of a finished step (start to end, restarts included), by step kind and final status. */
  stepDuration: Histogram<'kind' | 'status'>;
  queueJobs: Gauge<'queue' | 'state'>;
  waitingApprovals: Gauge<'talos_cluster'>;
  clusterLocked: Gauge<'talos_cluster' | 'kind' | 'state'>;
  approvalRequested: Gauge<'talos_cluster'>;
  readiness: Gauge<'probe'>;
  /** Every talosctl and tofu child process, by binary and subcommand. */
  execDuration: Histogram<'binary' | 'subcommand'>;
  execFailures: Counter<'binary' | 'subcommand' | 'code'>;
  slackApiErrors: Counter<'method' | 'error'>;
  slackRateLimited: Counter<'method'>;
  /** Socket Mode connections that ended, by Slack's `disconnect` reason (`closed`: the socket went without one). */
  slackSocketDisconnects: Counter<'reason'>;
  /** Attempts to open the Socket Mode connection that failed, by error (`http_503`, `unreachable`, a Slack error code). */
  slackSocketConnectFailures: Counter<'error'>;
  /** Socket Mode: 1 while the WebSocket to Slack is open, 0 while the bot is reconnecting. */
  slackSocketConnected: Gauge;
  /** Promise rejections nothing handled: each is a bug, logged and counted, and never ends the process. */
  unhandledRejections: Counter;
  /** Slack user-group lookups (`usergroups.users.list`) that failed, by Slack's error: the user was told to try again. */
  slackUsergroupLookupFailures: Counter<'error'>;
  /** Read commands refused by the per-user, per-cluster rate limit, by command. */
  commandsRateLimited: Counter<'command'>;
  healthGates: Counter<'talos_cluster' | 'result'>;
  healthChecks: Counter<'check' | 'status'>;
  /** 1 once Redis lost the bot's data (its epoch key is gone or replaced): the bot refuses to act until re-seeded. */
  redisEpochMissing: Gauge;
  buildInfo: Gauge<'version' | 'node_version' | 'commit'>;
  snapshotLastVerified: Gauge<'talos_cluster'>;
  snapshotScheduleInterval: Gauge<'talos_cluster'>;
  gateLast: Gauge<'talos_cluster' | 'verdict'>;
  gateVerdictSince: Gauge<'talos_cluster' | 'verdict'>;
  talosVersions: Gauge<'talos_cluster'>;
  clusterStopped: Gauge<'talos_cluster' | 'kind' | 'state'>;
}

const PREFIX = 'talos_chatops_';

/** The source's answer, or undefined when it fails or has not answered within `ms`: a scrape never hangs on one source. */
function answerWithin<T>(clock: Pick<Clock, 'sleep'>, read: () => Promise<T>, ms: number): Promise<T | undefined> {
  return withDeadline(clock, ms, read).then(
    (outcome) => (outcome.ok ? outcome.value : undefined),
    () => undefined,
  );
}

/**
 * Callers that come while a read is in flight share it: prom-client collects every gauge of a scrape
 * at once, so gauges fed by one source (the locks) cost Redis one read per scrape, not one per gauge.
 */
export function sharedRead<T>(read: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  return () => {
    inFlight ??= read().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}

/**
 * A private registry with every instrument of the bot. Nothing is registered globally,
 * so two bots in one process (or one test after another) never share counters.
 */
export function createMetrics(sources: MetricSources = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const sourceTimeoutMs = sources.sourceTimeoutMs ?? 2000;
  const clock = sources.clock ?? systemClock;
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
      const counts = await answerWithin(clock, sources.queueJobCounts, sourceTimeoutMs);
      for (const [queue, byState] of Object.entries(counts ?? {})) {
        for (const [state, count] of Object.entries(byState)) this.set({ queue, state }, count);
      }
    },
  });

  const waitingApprovals = new Gauge({
    name: `${PREFIX}waiting_approvals`,
    help: 'Operations waiting for an approver, by cluster, read at scrape time.',
    labelNames: ['talos_cluster'] as const,
    registers,
    async collect() {
      if (!sources.waitingApprovals) return;
      this.reset();
      const byCluster = await answerWithin(clock, sources.waitingApprovals, sourceTimeoutMs);
      for (const [cluster, count] of Object.entries(byCluster ?? {})) this.set({ talos_cluster: cluster }, count);
    },
  });

  const readHolds = (): Promise<ClusterHold[] | undefined> =>
    sources.clusterHolds ? answerWithin(clock, sources.clusterHolds, sourceTimeoutMs) : Promise.resolve(undefined);

  // Timestamps rather than ages: Prometheus computes the age with `time()`, so it keeps growing between scrapes
  // and a rule needs no knowledge of the scrape interval. The labels are bounded by the inventory: one holder per cluster.
  const clusterLocked = new Gauge({
    name: `${PREFIX}cluster_locked_since_timestamp_seconds`,
    help: "When the operation holding each locked cluster took it, in Unix seconds, by cluster and the holder's kind and state; absent for a free cluster.",
    labelNames: ['talos_cluster', 'kind', 'state'] as const,
    registers,
    async collect() {
      if (!sources.clusterHolds) return;
      this.reset();
      for (const hold of (await readHolds()) ?? [])
        this.set({ talos_cluster: hold.cluster, kind: hold.kind, state: hold.state }, hold.lockedSince);
    },
  });

  const approvalRequested = new Gauge({
    name: `${PREFIX}approval_requested_timestamp_seconds`,
    help: 'When the oldest approval request still unanswered was posted, in Unix seconds, by cluster; absent when none waits.',
    labelNames: ['talos_cluster'] as const,
    registers,
    async collect() {
      if (!sources.clusterHolds) return;
      this.reset();
      for (const hold of (await readHolds()) ?? []) {
        if (hold.approvalRequestedAt !== undefined) this.set({ talos_cluster: hold.cluster }, hold.approvalRequestedAt);
      }
    },
  });

  const readiness = new Gauge({
    name: `${PREFIX}ready`,
    help: 'Whether each readiness probe of /readyz passes (1) or not (0), by probe.',
    labelNames: ['probe'] as const,
    registers,
    async collect() {
      if (!sources.readiness) return;
      this.reset();
      // The probes bound themselves (a hung one reads as failing, as on /readyz): the margin lets such a probe show as 0 instead of dropping every series.
      const results = await answerWithin(clock, sources.readiness, sourceTimeoutMs + 500);
      for (const [probe, ok] of Object.entries(results ?? {})) this.set({ probe }, ok ? 1 : 0);
    },
  });

  const redisEpochMissing = new Gauge({
    name: `${PREFIX}redis_epoch_missing`,
    help: 'Whether Redis lost the data the bot keeps (1: its epoch key is gone or replaced, the bot refuses to act) or not (0).',
    registers,
    async collect() {
      if (!sources.redisEpochIntact) return;
      // An unanswered read is not a loss: the redis probe of /readyz reports an unreachable Redis.
      const intact = await answerWithin(clock, sources.redisEpochIntact, sourceTimeoutMs);
      if (intact !== undefined) this.set(intact ? 0 : 1);
    },
  });

  const build = sources.build ?? { version: 'unknown', nodeVersion: process.versions.node };
  const buildInfo = new Gauge({
    name: `${PREFIX}build_info`,
    help: "Always 1: the bot's version, the Node.js version it runs on and, when the image names it, the commit it was built from.",
    labelNames: ['version', 'node_version', 'commit'] as const,
    registers,
  });
  buildInfo.set({ version: build.version, node_version: build.nodeVersion, ...(build.commit ? { commit: build.commit } : {}) }, 1);

  const readSignals = (): Promise<ClusterSignal[] | undefined> =>
    sources.clusterSignals ? answerWithin(clock, sources.clusterSignals, sourceTimeoutMs) : Promise.resolve(undefined);
  /** A gauge with one series per cluster signal, reset at each scrape so a cluster that lost its signal loses its series. */
  const signalGauge = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    set: (gauge: Gauge<L>, signal: ClusterSignal) => void,
  ): Gauge<L> =>
    new Gauge<L>({
      name: `${PREFIX}${name}`,
      help,
      labelNames,
      registers,
      async collect() {
        if (!sources.clusterSignals) return;
        this.reset();
        for (const signal of (await readSignals()) ?? []) set(this, signal);
      },
    });
  const snapshotLastVerified = signalGauge(
    'snapshot_last_verified_timestamp_seconds',
    "When the newest verified etcd snapshot in the cluster's snapshotDir was taken, in Unix seconds; absent when there is none.",
    ['talos_cluster'],
    (g, s) => s.lastSnapshotAt !== undefined && g.set({ talos_cluster: s.cluster }, s.lastSnapshotAt),
  );
  const snapshotScheduleInterval = signalGauge(
    'snapshot_schedule_interval_seconds',
    "The longest time between two runs of the cluster's snapshot schedule, in seconds; absent without a schedule.",
    ['talos_cluster'],
    (g, s) => s.snapshotIntervalSeconds !== undefined && g.set({ talos_cluster: s.cluster }, s.snapshotIntervalSeconds),
  );
  const gateLast = signalGauge(
    'gate_last_timestamp_seconds',
    "When the cluster's last health gate ended, in Unix seconds, with its verdict (passed, warning, failed).",
    ['talos_cluster', 'verdict'],
    (g, s) => s.gate !== undefined && g.set({ talos_cluster: s.cluster, verdict: s.gate.verdict }, s.gate.at),
  );
  const gateVerdictSince = signalGauge(
    'gate_verdict_since_timestamp_seconds',
    "Since when the cluster's health gates have given the verdict of the last one, in Unix seconds, by verdict.",
    ['talos_cluster', 'verdict'],
    (g, s) => s.gate !== undefined && g.set({ talos_cluster: s.cluster, verdict: s.gate.verdict }, s.gate.since),
  );
  const talosVersions = signalGauge(
    'talos_versions',
    "How many distinct Talos versions the cluster's nodes reported to the last gate that read them (above 1: mixed versions).",
    ['talos_cluster'],
    (g, s) => s.talosVersions !== undefined && g.set({ talos_cluster: s.cluster }, s.talosVersions),
  );
  const clusterStopped = new Gauge({
    name: `${PREFIX}cluster_stopped`,
    help: 'Always 1, for each cluster held by an operation that stopped (failed or paused) and waits for a person, by its kind and state.',
    labelNames: ['talos_cluster', 'kind', 'state'] as const,
    registers,
    async collect() {
      if (!sources.clusterHolds) return;
      this.reset();
      for (const hold of (await readHolds()) ?? []) {
        if (STOPPED_STATES.has(hold.state)) this.set({ talos_cluster: hold.cluster, kind: hold.kind, state: hold.state }, 1);
      }
    },
  });

  return {
    registry,
    redisEpochMissing,
    buildInfo,
    snapshotLastVerified,
    snapshotScheduleInterval,
    gateLast,
    gateVerdictSince,
    talosVersions,
    clusterStopped,
    operations: new Counter({
      name: `${PREFIX}operations_total`,
      help: 'Operations that ended, by cluster, kind and result.',
      labelNames: ['talos_cluster', 'kind', 'result'] as const,
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
    clusterLocked,
    approvalRequested,
    readiness,
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
    slackUsergroupLookupFailures: new Counter({
      name: `${PREFIX}slack_usergroup_lookup_failures_total`,
      help: 'Slack user-group membership lookups (usergroups.users.list) that failed, by error: the user was asked to try again.',
      labelNames: ['error'] as const,
      registers,
    }),
    commandsRateLimited: new Counter({
      name: `${PREFIX}commands_rate_limited_total`,
      help: 'Read commands refused by the per-user, per-cluster rate limit, by command.',
      labelNames: ['command'] as const,
      registers,
    }),
    slackSocketDisconnects: new Counter({
      name: `${PREFIX}slack_socket_disconnects_total`,
      help: 'Socket Mode connections to Slack that ended, by the reason Slack gave (closed: the socket went without one).',
      labelNames: ['reason'] as const,
      registers,
    }),
    slackSocketConnectFailures: new Counter({
      name: `${PREFIX}slack_socket_connect_failures_total`,
      help: 'Failed attempts to open the Socket Mode connection to Slack, by error; the bot keeps trying.',
      labelNames: ['error'] as const,
      registers,
    }),
    slackSocketConnected: new Gauge({
      name: `${PREFIX}slack_socket_connected`,
      help: 'Socket Mode: whether the WebSocket to Slack is open (1) or the bot is reconnecting (0).',
      registers,
    }),
    unhandledRejections: new Counter({
      name: `${PREFIX}unhandled_rejections_total`,
      help: 'Promise rejections that nothing handled; logged, and the process carries on.',
      registers,
    }),
    healthGates: new Counter({
      name: `${PREFIX}health_gates_total`,
      help: 'Health gates of /talos health, by cluster and result (passed, failed, error when the gate could not run).',
      labelNames: ['talos_cluster', 'result'] as const,
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
