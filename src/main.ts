import { pathToFileURL } from 'node:url';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { WebClient } from '@slack/web-api';
import { createAuthorizer } from '../handlers/authorize.ts';
import { createSlackApp, SLACK_RETRY } from '../handlers/slack-app.ts';
import { createSlackChat } from '../handlers/slack-chat.ts';
import { registerTalosCommand } from '../handlers/talos-command.ts';
import { registerOperationActions } from '../handlers/operation-actions.ts';
import { createHealthGateJob } from '../jobs/health-gate-job.ts';
import { createOpsJobs } from '../jobs/index.ts';
import type { OpsJobDeps } from '../jobs/job-context.ts';
import { approvalDecidedMessage, operationRootMessage } from './chat/upgrade-messages.ts';
import { createAudit } from './ops/audit.ts';
import { createClusterLock } from './ops/cluster-lock.ts';
import { createDeliveryDedupe } from './ops/delivery-dedupe.ts';
import type { Operation } from './ops/operation.ts';
import { createOperationStore } from './ops/operation-store.ts';
import { createImageFactory } from './talos/image-factory.ts';
import { createClusterAccess } from './cluster/cluster-session.ts';
import { createTofu } from './cluster/tofu.ts';
import { ConfigError } from './config/config-error.ts';
import { loadConfig } from './config/env.ts';
import { loadInventory } from './config/inventory.ts';
import { createProcessRunner } from './exec/process-runner.ts';
import { opsRoutes } from './http/ops-endpoints.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { SecretScrubber } from './log/secret-scrubber.ts';
import { OPS_QUEUE, READ_QUEUE } from './queue/job-schemas.ts';
import { createTalosctlBinaries } from './talos/talosctl-binary.ts';

export interface RunningBot {
  logger: Logger;
  stop(): Promise<void>;
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
  const logger = createLogger({ level: config.logLevel, pretty: config.logPretty, scrubber });

  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
  const readQueue = new Queue(READ_QUEUE, { connection: redis });
  const opsQueue = new Queue(OPS_QUEUE, { connection: redis });
  const store = createOperationStore(redis);
  const lock = createClusterLock(redis);
  const dedupe = createDeliveryDedupe(redis);
  const now = (): Date => new Date();

  const runner = createProcessRunner({ scrubber });
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

  const slackClient = new WebClient(config.slack.botToken, {
    ...(config.slack.apiUrl === undefined ? {} : { slackApiUrl: config.slack.apiUrl }),
    retryConfig: SLACK_RETRY,
  });
  const chat = createSlackChat(slackClient, scrubber);

  const audit = createAudit(store, chat, now);
  const opsDeps: OpsJobDeps = {
    inventory,
    store,
    lock,
    audit,
    access,
    tofu,
    factory: createImageFactory(config.imageFactoryUrl, config.timeouts.probeMs),
    chat,
    opsQueue,
    logger,
    timeouts: config.timeouts,
    now,
  };
  const healthGate = createHealthGateJob({ inventory, access, chat, logger, probeTimeoutMs: config.timeouts.probeMs });
  const opsJobs = createOpsJobs(opsDeps);
  // A crashed replica's job is picked up by another once its lock lapses; resumes are many, so stalls never fail a job.
  const workerOptions = { connection: redis, autorun: false, lockDuration: config.timeouts.jobLockMs, stalledInterval: config.timeouts.jobLockMs, maxStalledCount: 1000 };
  const readWorker = new Worker(
    READ_QUEUE,
    async (job, _token, signal) => {
      if (job.name === 'health') return healthGate(job, signal);
      throw new Error(`unknown job ${job.name}`);
    },
    { ...workerOptions, concurrency: 8 },
  );
  const opsWorker = new Worker(
    OPS_QUEUE,
    async (job, _token, signal) => {
      const run = opsJobs[job.name];
      if (!run) throw new Error(`unknown job ${job.name}`);
      return run(job, signal);
    },
    { ...workerOptions, concurrency: 4 },
  );
  for (const worker of [readWorker, opsWorker]) {
    worker.on('failed', (job, error) => logger.error({ op: job?.id, err: error.message }, 'job failed'));
  }
  const onCancelled = async (op: Operation): Promise<void> => {
    if (op.rootTs) await chat.update(op.channel, op.rootTs, operationRootMessage(op));
    for (const approval of op.approvals.filter((a) => a.state === 'pending' && a.messageTs !== '')) {
      const step = op.steps.find((s) => s.id === approval.step);
      if (step) await chat.update(op.channel, approval.messageTs, approvalDecidedMessage(op, { ...approval, state: 'stopped', by: op.cancelRequestedBy, at: op.endedAt }, step));
    }
    await audit.record(op.id, { actor: op.cancelRequestedBy ?? 'bot', event: 'cancelled', detail: op.reason });
  };

  let slackConnected = false;
  const routes = opsRoutes(
    [
      { name: 'redis', check: async () => (await redis.ping()) === 'PONG' },
      { name: 'slack', check: () => Promise.resolve(slackConnected) },
      { name: 'workers', check: () => Promise.resolve(readWorker.isRunning() && opsWorker.isRunning()) },
    ],
    () => Promise.resolve(''),
  );
  const app = createSlackApp(config, logger, routes);
  const authorizer = createAuthorizer(slackClient);
  registerTalosCommand(app, { inventory, readQueue, opsQueue, store, lock, dedupe, authorizer, logger, now, onCancelled });
  registerOperationActions(app, { inventory, store, lock, audit, chat, opsQueue, authorizer, logger, now, planTtlMs: config.timeouts.planTtlMs, onCancelled });
  app.error(async (error) => {
    logger.error({ err: error.message, code: error.code }, 'slack listener error');
  });

  await app.start();
  slackConnected = true;
  void readWorker.run();
  void opsWorker.run();
  logger.info({ mode: config.slack.appToken ? 'socket' : 'http', clusters: inventory.clusters.map((c) => c.name), port: config.httpPort }, 'bot started');

  let stopping: Promise<void> | undefined;
  return {
    logger,
    stop() {
      stopping ??= (async () => {
        logger.info('stopping: no new commands, letting running steps finish');
        slackConnected = false;
        await app.stop().catch(() => undefined);
        await Promise.all([readWorker.close(), opsWorker.close()]);
        await Promise.all([readQueue.close(), opsQueue.close()]);
        await redis.quit().catch(() => undefined);
        logger.info('stopped');
        logger.flush();
      })();
      return stopping;
    },
  };
}

async function main(): Promise<void> {
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
  const shutdown = (signal: string): void => {
    bot.logger.info({ signal }, 'shutdown requested');
    void bot.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await main();
}
