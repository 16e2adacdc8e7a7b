import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Queue } from 'bullmq';
import { connectRedis } from './queue/redis-connection.ts';
import { createAuthorizer } from '../handlers/authorize.ts';
import { createSlackApp } from '../handlers/slack-app.ts';
import { onSlackRateLimited } from './slack/slack-chat.ts';
import { createSlackClients } from './slack/slack-clients.ts';
import { createHomePublisher } from './slack/slack-home.ts';
import { registerHomeTab } from '../handlers/home-tab.ts';
import { createHomeRecords } from './home/home-records.ts';
import { createHomeTab, type HomeTab } from './home/home-tab.ts';
import { registerTalosCommand } from '../handlers/talos-command.ts';
import { registerOperationActions } from '../handlers/operation-actions.ts';
import { registerOverrideAction } from '../handlers/override-action.ts';
import { createOpsJobs, createReadJobs, createScheduledJobs, type ScheduledJobDeps } from '../jobs/index.ts';
import { RETENTION_SWEEP_JOB_NAME } from '../jobs/retention-sweep-job.ts';
import { createRecordExporter } from './ops/record-export.ts';
import { createScheduledGateState } from './ops/scheduled-gate-state.ts';
import { gateSchedulerCluster, syncSchedules } from './queue/schedules.ts';
import { DrainCheckpoint } from '../jobs/job-context.ts';
import { createAudit } from './ops/audit.ts';
import { createClusterLock } from './ops/cluster-lock.ts';
import { createDeliveryDedupe } from './ops/delivery-dedupe.ts';
import { createNodeClassRecord } from './ops/node-class-record.ts';
import type { Operation } from './ops/operation.ts';
import { createOperationStore } from './ops/operation-store.ts';
import { createRunLease } from './ops/run-lease.ts';
import { createRunningGates } from './ops/running-gate.ts';
import { createImageFactory } from './talos/image-factory.ts';
import { createClusterAccess } from './cluster/cluster-session.ts';
import { sweepPrivateDirs } from './cluster/private-dir.ts';
import { createTofu } from './cluster/tofu.ts';
import { createWorkingTreeReader } from './tofu/working-tree.ts';
import { ConfigError } from './config/config-error.ts';
import { loadConfig } from './config/env.ts';
import { loadInventory } from './config/inventory.ts';
import { inventoryWarnings } from './config/inventory-warnings.ts';
import { probeRedisAccess, redisAccessRule } from './config/redis-password-check.ts';
import { createProcessRunner } from './exec/process-runner.ts';
import { opsRoutes, runProbes, type ReadinessProbe } from './http/ops-endpoints.ts';
import { recordExecCall } from './metrics/exec-labels.ts';
import { createMetrics, sharedRead } from './metrics/metrics.ts';
import { readClusterHolds, recordOperationChange, waitingApprovalCounts } from './ops/operation-metrics.ts';
import { createWorkers } from './queue/workers.ts';
import { createShutdown } from './shutdown.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { redisPassword, secretEnvValues } from './log/process-secrets.ts';
import { SecretScrubber } from './log/secret-scrubber.ts';
import { OPS_QUEUE, READ_QUEUE } from './queue/job-schemas.ts';
import { createTalosctlBinaries } from './talos/talosctl-binary.ts';

/** How long start-up waits for Redis to answer the password check: it may be starting beside the bot. */
const REDIS_PROBE_TIMEOUT_MS = 30_000;

export interface RunningBot {
  logger: Logger;
  /** `SHUTDOWN_GRACE_SECONDS`, in ms: how long `stop()` lets running jobs finish. */
  shutdownGraceMs: number;
  /** Stops taking commands, lets running jobs finish within the grace period (then forces), closes Redis. */
  stop(): Promise<void>;
  /** Logs and counts a promise rejection nothing handled; the process carries on (its jobs may be running talosctl or tofu). */
  unhandledRejection: (reason: unknown) => void;
}

/**
 * The composition root: the only place that reads the environment and builds the
 * clients (logger, Redis, queues, workers, Slack, process runner), then hands narrow
 * interfaces to handlers and jobs.
 */
export async function startBot(env: Record<string, string | undefined>): Promise<RunningBot> {
  const config = loadConfig(env);
  const inventory = loadInventory(config.clustersFile);
  const scrubber = new SecretScrubber();
  scrubber.add(config.slack.botToken);
  scrubber.add(config.slack.appToken);
  scrubber.add(config.slack.signingSecret);
  scrubber.add(redisPassword(config.redisUrl));
  for (const value of secretEnvValues(config.tofuEnv)) scrubber.add(value);
  const logger = createLogger({ level: config.logLevel, pretty: config.logPretty, scrubber });
  for (const cluster of inventory.clusters) {
    for (const message of inventoryWarnings({ clusters: [cluster] })) logger.warn({ cluster: cluster.name }, message);
  }
  const productionClusters = inventory.clusters.filter((c) => c.environment === 'production').map((c) => c.name);
  if (productionClusters.length > 0) {
    const access = await probeRedisAccess(config.redisUrl, REDIS_PROBE_TIMEOUT_MS);
    const warning = redisAccessRule(access, { url: config.redisUrl, productionClusters, allowInsecure: config.allowInsecureRedis });
    if (warning !== undefined) logger.warn({ clusters: productionClusters }, warning);
  }
  // A killed replica's credential and plan directories would otherwise stay on disk for good.
  const swept = await sweepPrivateDirs(config.credentialsDir);
  if (swept > 0) logger.info({ removed: swept }, 'private directories of an ended process removed');

  const redis = connectRedis(config.redisUrl);
  redis.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis connection error'));
  const readQueue = new Queue(READ_QUEUE, { connection: redis });
  const opsQueue = new Queue(OPS_QUEUE, { connection: redis });
  // Queues share `redis`, whose errors are logged above; unheard, BullMQ prints them raw to stderr.
  for (const queue of [readQueue, opsQueue]) queue.on('error', (error) => logger.debug({ queue: queue.name, err: error.message }, 'queue error'));
  const lock = createClusterLock(redis);
  const clusterNames = inventory.clusters.map((c) => c.name);
  const clusterHolds = sharedRead(() => readClusterHolds(clusterNames, (cluster) => lock.holder(cluster), (id) => store.get(id)));
  // Filled once the probes' subjects (Slack, the workers) exist; the `ready` gauge reads them at scrape time.
  let probes: ReadinessProbe[] = [];
  const metrics = createMetrics({
    queueJobCounts: async () => {
      const states = ['waiting', 'active', 'delayed', 'prioritized', 'failed'] as const;
      const [read, ops] = await Promise.all([readQueue.getJobCounts(...states), opsQueue.getJobCounts(...states)]);
      return { [READ_QUEUE]: read, [OPS_QUEUE]: ops };
    },
    waitingApprovals: async () => waitingApprovalCounts(clusterNames, await clusterHolds()),
    clusterHolds,
    readiness: () => runProbes(probes, 2000),
  });
  const recordChange = recordOperationChange(metrics);
  let home: HomeTab | undefined;
  const now = (): Date => new Date();
  // Every path that ends an operation writes it through the store, so its record is exported here, once, by the writer that ended it.
  const exporter = config.recordExportDir === undefined ? undefined : createRecordExporter({ dir: config.recordExportDir, now, logger });
  const store = createOperationStore(redis, {
    onChange: (before, after) => (recordChange(before, after), home?.operationChanged(before, after), exporter?.operationChanged(before, after)),
    retentionMs: config.retention.operationMs,
    scrub: (text) => scrubber.scrub(text),
  });
  const dedupe = createDeliveryDedupe(redis, config.retention.dedupeSeconds);
  const gateState = createScheduledGateState(redis);

  const runner = createProcessRunner({ scrubber, onCall: recordExecCall(metrics) });
  const tofu = createTofu({ runner, bin: config.tofuBin, env: { ...config.childEnv, ...config.tofuEnv }, timeoutMs: config.timeouts.probeMs });
  const access = createClusterAccess({
    runner,
    tofu,
    binaries: createTalosctlBinaries(config.talosctlBin),
    scrubber,
    credentialsDir: config.credentialsDir,
    childEnv: config.childEnv,
    talosctlTimeoutMs: config.timeouts.probeMs,
  });

  const { client: slackClient, chat } = createSlackClients(config.slack, scrubber, metrics);
  home = createHomeTab({ inventory, store, lock, records: createHomeRecords(redis), chat, publisher: createHomePublisher(slackClient, scrubber), now, logger });
  const audit = createAudit(store, chat, { now, logger, postLease: createRunLease(redis, { ttlMs: config.timeouts.jobLockMs, prefix: 'talos:audit-post' }) });
  // Set when shutdown begins; operations then stop between steps (see DrainCheckpoint).
  let draining = false;
  const jobDeps: ScheduledJobDeps = {
    inventory,
    store,
    lock,
    runLease: createRunLease(redis, { ttlMs: config.timeouts.jobLockMs }),
    audit,
    nodeClasses: createNodeClassRecord(redis),
    access,
    tofu,
    factory: createImageFactory(config.imageFactoryUrl, config.timeouts.probeMs),
    chat,
    opsQueue,
    logger,
    timeouts: config.timeouts,
    now,
    draining: () => draining,
    git: createWorkingTreeReader(runner, { bin: config.gitBin, env: config.childEnv, timeoutMs: config.timeouts.probeMs }),
    planDir: config.planDir ?? join(config.credentialsDir ?? tmpdir(), 'talos-chatops-plans'),
    onReport: (report) => {
      metrics.healthGates.inc({ cluster: report.cluster, result: report.passed ? 'passed' : 'failed' });
      for (const check of report.checks) metrics.healthChecks.inc({ check: check.id, status: check.status });
      home?.gateFinished(report);
    },
    onGateError: (cluster) => metrics.healthGates.inc({ cluster, result: 'error' }),
    // A gate reads its credentials, picks its talosctl and runs its probes, each within the probe timeout.
    runningGates: createRunningGates(redis, { ttlMs: 3 * config.timeouts.probeMs + 60_000 }),
    gateState,
    redis,
    retentionMs: config.retention.operationMs,
    jobRetentionMs: config.retention.jobSeconds * 1000,
    readQueue,
  };
  const scheduled = createScheduledJobs(jobDeps);
  const workers = createWorkers({
    connection: redis,
    read: { ...createReadJobs(jobDeps), ...scheduled.read },
    ops: { ...createOpsJobs(jobDeps), ...scheduled.ops },
    keepJobs: { age: config.retention.jobSeconds, count: 1000 },
    jobLockMs: config.timeouts.jobLockMs,
    readConcurrency: config.readConcurrency,
    isCheckpoint: (error) => error instanceof DrainCheckpoint,
    logger,
    scrub: (text) => scrubber.scrub(text),
  });
  // The messages of a cancelled operation are edited by a job, so the command or click that cancelled answers first.
  const onCancelled = async (cancelled: Operation): Promise<void> => {
    await opsQueue.add('operation-cancelled', { opId: cancelled.id }, { jobId: `${cancelled.id}-cancelled`, attempts: 6, backoff: { type: 'exponential', delay: 1000 } });
  };

  probes = [
    { name: 'redis', check: async () => redis.status === 'ready' && (await redis.ping()) === 'PONG' },
    { name: 'slack', check: () => Promise.resolve(slack.connected()) },
    { name: 'workers', check: () => Promise.resolve([workers.read, workers.ops].every((w) => w.isRunning() && !w.isPaused())) },
    { name: 'draining', check: () => Promise.resolve(!draining) },
  ];
  const routes = opsRoutes(probes, () => metrics.registry.metrics());
  const slack = createSlackApp(config, logger, routes, {
    onDisconnect: (reason) => metrics.slackSocketDisconnects.inc({ reason }),
    onConnectFailure: (error) => metrics.slackSocketConnectFailures.inc({ error }),
    onConnectedChange: (connected) => metrics.slackSocketConnected.set(connected ? 1 : 0),
  });
  const { app } = slack;
  onSlackRateLimited(app.client, (method) => metrics.slackRateLimited.inc({ method }));
  const authorizer = createAuthorizer(slackClient);
  registerTalosCommand(app, { inventory, readQueue, opsQueue, store, lock, dedupe, authorizer, chat, logger, now, onCancelled });
  const actionDeps = { inventory, store, lock, audit, chat, opsQueue, authorizer, logger, now, planTtlMs: config.timeouts.planTtlMs, onCancelled };
  registerOperationActions(app, actionDeps);
  registerOverrideAction(app, actionDeps);
  registerHomeTab(app, home);
  app.error(async (error) => {
    logger.error({ err: error.message, code: error.code }, 'slack listener error');
  });

  await slack.start();
  workers.run();
  // One schedule for every replica (same id): operations left without a run get one, unposted audit replies get posted.
  void opsQueue
    .upsertJobScheduler('ops-reconcile', { every: Math.max(5000, 2 * config.timeouts.jobLockMs) }, { name: 'ops-reconcile', opts: { removeOnComplete: true, removeOnFail: 100 } })
    .catch((error: unknown) => logger.warn({ err: (error as Error).message }, 'cannot schedule the operation reconciler; it is scheduled at the next start'));
  // The retention sweep trims the operation indexes; the keys themselves expire by their TTL.
  void opsQueue
    .upsertJobScheduler(RETENTION_SWEEP_JOB_NAME, { every: 3_600_000 }, { name: RETENTION_SWEEP_JOB_NAME, opts: { removeOnComplete: true, removeOnFail: 100 } })
    .catch((error: unknown) => logger.warn({ err: (error as Error).message }, 'cannot schedule the retention sweep; it is scheduled at the next start'));
  void syncSchedules({ read: readQueue, ops: opsQueue }, inventory)
    .then(async ({ upserted, removed }) => {
      for (const cluster of removed.map(gateSchedulerCluster)) if (cluster !== undefined) await gateState.forget(cluster);
      logger.info({ schedules: upserted, removed }, 'cluster schedules in place');
    })
    .catch((error: unknown) => logger.warn({ err: (error as Error).message }, 'cannot schedule the clusters\' gates and snapshots; they are scheduled at the next start'));
  logger.info({ mode: config.slack.appToken ? 'socket' : 'http', clusters: inventory.clusters.map((c) => c.name), port: config.httpPort }, 'bot started');

  return {
    logger,
    shutdownGraceMs: config.shutdownGraceMs,
    unhandledRejection: (reason) => {
      metrics.unhandledRejections.inc();
      logger.error({ err: reason instanceof Error ? reason.message : String(reason), stack: reason instanceof Error ? reason.stack : undefined }, 'unhandled promise rejection; the bot carries on');
    },
    stop: createShutdown({
      logger,
      graceMs: config.shutdownGraceMs,
      intake: slack,
      workers,
      queues: [readQueue, opsQueue],
      redis,
      onDraining: () => {
        draining = true;
        home?.close();
      },
    }),
  };
}

async function main(): Promise<void> {
  // Node ends the process on an unhandled rejection by default, and with it every talosctl or tofu child of a running job.
  let onRejection = (reason: unknown): void => void process.stderr.write(`talos-chatops: unhandled promise rejection while starting: ${String(reason)}\n`);
  process.on('unhandledRejection', (reason) => onRejection(reason));
  let bot: RunningBot;
  try {
    bot = await startBot(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`talos-chatops cannot start. ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  onRejection = (reason) => bot.unhandledRejection(reason);
  const shutdown = (signal: string): void => {
    bot.logger.info({ signal }, 'shutdown requested');
    // Closing queues and Redis after the grace is quick; a Redis that never answers must not keep the process alive.
    setTimeout(() => {
      process.stderr.write('talos-chatops did not finish stopping in time; exiting\n');
      process.exit(1);
    }, bot.shutdownGraceMs + 15_000).unref();
    void bot.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`talos-chatops did not stop cleanly: ${(error as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  // `on`, not `once`: execa's exit hook re-raises a signal it believes nobody else handles,
  // which kills the process mid-shutdown whenever a child (talosctl, tofu) is running.
  let signalled = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (signalled) {
        // A second Ctrl-C means now; a forced job resumes elsewhere like after a crash.
        process.exit(1);
      }
      signalled = true;
      shutdown(signal);
    });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await main();
}
