import { buildAdapters, fetchMissingTerraformRepos, recordObservations } from './bootstrap/adapters.ts';
import { sweepEndedPlans } from '../jobs/plan-sweep.ts';
import { buildInfrastructure } from './bootstrap/infrastructure.ts';
import { buildMetrics } from './bootstrap/metrics.ts';
import { buildOperationRecords } from './bootstrap/operation-records.ts';
import { buildOperationsCore } from './bootstrap/operations-core.ts';
import { buildProcessors, buildWorkers } from './bootstrap/processors.ts';
import { startSchedules } from './bootstrap/schedules.ts';
import { startInventoryReload } from './bootstrap/inventory-reload.ts';
import { ensureSnapshotDirs } from './bootstrap/snapshot-dirs.ts';
import { namesResolver, type InventoryNames } from './bootstrap/inventory-names.ts';
import { createSlackNameLookup } from './slack/slack-names.ts';
import { startEpochWatch } from './bootstrap/redis-epoch-watch.ts';
import { standardGate } from '../jobs/health-gate-job.ts';
import { buildDoctor, postDoctorAtStart } from './bootstrap/doctor.ts';
import { buildSlackIntake } from './bootstrap/slack-intake.ts';
import type { StartOverrides } from './bootstrap/start-overrides.ts';
import { opsRoutes } from './http/ops-endpoints.ts';
import type { Logger } from './log/logger.ts';
import { createShutdown } from './shutdown.ts';
import { unhandledRejectionReporter } from './bootstrap/metrics.ts';

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
 * The composition root: the only place that reads the environment and builds the clients
 * (logger, Redis, queues, workers, Slack, process runner, clock), then hands narrow interfaces
 * to handlers and jobs. `overrides` replace the clock or the log destination in tests.
 */
export async function startBot(env: Record<string, string | undefined>, overrides: StartOverrides = {}): Promise<RunningBot> {
  const infra = await buildInfrastructure(env, overrides);
  const { config, logger, redis, queues } = infra;
  const records = buildOperationRecords(infra);
  const { metrics, probes } = buildMetrics(infra, records);
  const adapters = buildAdapters(infra, metrics, recordObservations(records.observedEstates, infra.clock, logger));
  // `#channel` and `@handle` entries become ids before anything reads the inventory's channels or people.
  const names: InventoryNames = { current: [] };
  const resolveNames = namesResolver(createSlackNameLookup(adapters.slackClient), config.clustersFile, names, logger);
  infra.inventory.replace(await resolveNames(infra.inventory.current()));
  await ensureSnapshotDirs(infra.inventory.clusters, logger);
  // In the background: start-up waits for no git server; a job before it is done finds no outputs yet and says so.
  void fetchMissingTerraformRepos(adapters, infra.inventory, logger);
  // A crash can lose an operation's `ended` job: its plan, which carries the state's secrets, goes now.
  await sweepEndedPlans({ store: records.store, planDir: adapters.planDir, logger, now: () => infra.clock.now() });
  // The operations core: every operation's audit, the Home tab, the exported records, the drain.
  const core = buildOperationsCore(infra, records, adapters);
  const workers = buildWorkers(infra, buildProcessors({ infra, records, adapters, core, metrics }));
  const doctor = buildDoctor(infra, adapters, names);
  const slack = buildSlackIntake({
    infra,
    records,
    adapters,
    core,
    metrics,
    doctor,
    routes: opsRoutes(probes, () => metrics.registry.metrics(), { clock: infra.clock }),
  });
  probes.push(
    { name: 'redis', check: async () => redis.status === 'ready' && (await redis.ping()) === 'PONG' },
    { name: 'slack', check: () => Promise.resolve(slack.connected()) },
    { name: 'workers', check: () => Promise.resolve([workers.read, workers.ops].every((w) => w.isRunning() && !w.isPaused())) },
    { name: 'draining', check: () => Promise.resolve(!core.drain.draining()) },
    // Named for the reason: `/readyz` answers `not ready: redis-epoch` once Redis lost the bot's data.
    { name: 'redis-epoch', check: () => infra.epoch.check() },
  );

  await slack.start();
  workers.run();
  // While it runs, not only at start: a flush or an older copy of Redis is noticed within a poll and told once per cluster.
  const epochWatch = startEpochWatch({
    epoch: infra.epoch,
    redis,
    clusters: () => infra.inventory.clusters,
    chat: adapters.chat,
    logger,
    intervalMs: config.redisEpochCheckMs,
    observe: standardGate(adapters.access, config.timeouts.probeMs),
  });
  startSchedules({ config, inventory: infra.inventory, logger, queues, gateState: records.gateState });
  const reload = await startInventoryReload(
    infra,
    metrics,
    adapters.chat,
    () => {
      startSchedules({ config, inventory: infra.inventory.current(), logger, queues, gateState: records.gateState });
      void ensureSnapshotDirs(infra.inventory.clusters, logger);
    },
    resolveNames,
  );
  void postDoctorAtStart({ channel: config.doctorChannel, chat: adapters.chat, logger, scrubber: infra.scrubber }, doctor);
  logger.info(
    { mode: config.slack.appToken ? 'socket' : 'http', clusters: infra.inventory.clusters.map((c) => c.name), port: config.httpPort },
    'bot started',
  );
  return {
    logger,
    shutdownGraceMs: config.shutdownGraceMs,
    unhandledRejection: unhandledRejectionReporter(metrics, logger),
    stop: createShutdown({
      logger,
      graceMs: config.shutdownGraceMs,
      intake: slack,
      workers,
      queues: [queues.read, queues.ops],
      redis,
      onDraining: () => (reload.stop(), epochWatch.stop(), core.drain.begin(), core.home.close()),
    }),
  };
}
