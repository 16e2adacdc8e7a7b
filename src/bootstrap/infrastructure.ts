import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { loadConfig, type Config } from '../config/env.ts';
import { loadInventory, type Inventory } from '../config/inventory.ts';
import { inventoryWarnings } from '../config/inventory-warnings.ts';
import { InventoryHolder } from '../config/inventory-holder.ts';
import { redisAccessRule } from '../config/redis-password-check.ts';
import { redisDurabilityRule } from '../config/redis-durability-check.ts';
import { sweepPrivateDirs } from '../cluster/private-dir.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { ConfigError } from '../config/config-error.ts';
import { secretClashes } from '../config/secret-clashes.ts';
import { redisPassword, secretEnvEntries } from '../log/process-secrets.ts';
import { SecretScrubber } from '../log/secret-scrubber.ts';
import {
  OPS_QUEUE,
  READ_QUEUE,
  type JobData,
  type OpsJobName,
  type OpsQueue,
  type ReadJobName,
  type ReadQueue,
} from '../queue/job-schemas.ts';
import { probeRedisAccess } from '../queue/redis-access-probe.ts';
import { connectRedis } from '../queue/redis-connection.ts';
import { probeRedisDurability } from '../queue/redis-durability-probe.ts';
import { establishEpoch, type RedisEpoch } from '../ops/redis-epoch.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import type { StartOverrides } from './start-overrides.ts';

/** How long start-up waits for Redis to answer the password check: it may be starting beside the bot. */
const REDIS_PROBE_TIMEOUT_MS = 30_000;

/** What everything else is built on: settings, the clock, the scrubbed logger, Redis and the two queues. */
export interface Infrastructure {
  config: Config;
  /** The inventory in force: reloaded from `CLUSTERS_FILE` when it changes (see `./inventory-reload.ts`). */
  inventory: InventoryHolder;
  clock: Clock;
  scrubber: SecretScrubber;
  logger: Logger;
  redis: Redis;
  /** The Redis epoch this process adopted: lost when Redis lost the bot's data (see `src/ops/redis-epoch.ts`). */
  epoch: RedisEpoch;
  queues: { read: ReadQueue; ops: OpsQueue };
}

/** Every credential the process holds from its environment, by the variable that gave it. */
export function processSecrets(config: Config): [name: string, value: string][] {
  const named: [string, string | undefined][] = [
    ['SLACK_BOT_TOKEN', config.slack.botToken],
    ['SLACK_APP_TOKEN', config.slack.appToken],
    ['SLACK_SIGNING_SECRET', config.slack.signingSecret],
    ['REDIS_URL (its password)', redisPassword(config.redisUrl)],
  ];
  return [...named.filter((entry): entry is [string, string] => entry[1] !== undefined), ...secretEnvEntries(config.tofuEnv)];
}

/**
 * The scrubber knows every credential the process holds before the first line is logged.
 *
 * @throws {ConfigError} naming each variable whose secret equals a cluster name, a version or another inventory value
 */
function scrubberFor(config: Config, inventory: Inventory): SecretScrubber {
  const secrets = processSecrets(config);
  const clashes = secretClashes(secrets, inventory);
  if (clashes.length > 0) throw new ConfigError('The environment', clashes);
  const scrubber = new SecretScrubber();
  for (const [, value] of secrets) scrubber.add(value);
  return scrubber;
}

/** With a production cluster in the inventory, an open Redis is refused (or accepted with a warning at every start). */
async function checkRedisAccess(config: Config, inventory: Inventory, logger: Logger, clock: Clock): Promise<void> {
  const productionClusters = inventory.clusters.filter((c) => c.environment === 'production').map((c) => c.name);
  if (productionClusters.length === 0) return;
  const access = await probeRedisAccess(config.redisUrl, REDIS_PROBE_TIMEOUT_MS, clock);
  const warning = redisAccessRule(access, { url: config.redisUrl, productionClusters, allowInsecure: config.allowInsecureRedis });
  if (warning !== undefined) logger.warn({ clusters: productionClusters }, warning);
}

/** With a production cluster in the inventory, a Redis that may lose a lock (no AOF, eviction, settings it will not tell) is refused (or accepted with a warning). */
async function checkRedisDurability(config: Config, inventory: Inventory, redis: Redis, logger: Logger): Promise<void> {
  const productionClusters = inventory.clusters.filter((c) => c.environment === 'production').map((c) => c.name);
  if (productionClusters.length === 0) return;
  const durability = await probeRedisDurability(redis);
  const host = new URL(config.redisUrl).host;
  const warning = redisDurabilityRule(durability, { host, productionClusters, check: config.redisDurabilityCheck });
  if (warning !== undefined) logger.warn({ clusters: productionClusters }, warning);
}

/**
 * Reads the environment (the only place that does) and the inventory, then connects.
 *
 * @throws {ConfigError} for a bad setting, inventory or Redis: the message names each and its fix
 */
export async function buildInfrastructure(env: Record<string, string | undefined>, overrides: StartOverrides): Promise<Infrastructure> {
  const config = loadConfig(env);
  const inventory = new InventoryHolder(loadInventory(config.clustersFile));
  const clock = overrides.clock ?? systemClock;
  const scrubber = scrubberFor(config, inventory);
  const logger = createLogger({
    level: config.logLevel,
    pretty: config.logPretty,
    scrubber,
    ...(overrides.logDestination ? { destination: overrides.logDestination } : {}),
  });
  for (const cluster of inventory.clusters) {
    for (const message of inventoryWarnings({ clusters: [cluster] })) logger.warn({ cluster: cluster.name }, message);
  }
  await checkRedisAccess(config, inventory, logger, clock);
  // A killed replica's credential and plan directories would otherwise stay on disk for good.
  const swept = await sweepPrivateDirs(config.credentialsDir);
  if (swept > 0) logger.info({ removed: swept }, 'private directories of an ended process removed');

  const redis = connectRedis(config.redisUrl);
  redis.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis connection error'));
  try {
    await checkRedisDurability(config, inventory, redis, logger);
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  const epoch = await establishEpoch(redis, {
    reseed: config.redisEpochReseed,
    now: () => clock.now(),
    // An alert: the talos_chatops_redis_epoch_missing gauge and /readyz (redis-epoch) say it too.
    onLost: (reason) => logger.error({ key: 'talos:epoch' }, `${reason}; see docs/operating.md, "Redis lost its data"`),
  });
  if (config.redisEpochReseed)
    logger.warn({ key: 'talos:epoch' }, 'REDIS_EPOCH_RESEED=true: remove it once this start is done, so a later loss is noticed');
  const queues = {
    read: new Queue<JobData<ReadJobName>, unknown, ReadJobName>(READ_QUEUE, { connection: redis }),
    ops: new Queue<JobData<OpsJobName>, unknown, OpsJobName>(OPS_QUEUE, { connection: redis }),
  };
  // Queues share `redis`, whose errors are logged above; unheard, BullMQ prints them raw to stderr.
  for (const queue of [queues.read, queues.ops])
    queue.on('error', (error) => logger.debug({ queue: queue.name, err: error.message }, 'queue error'));
  return { config, inventory, clock, scrubber, logger, redis, epoch, queues };
}
