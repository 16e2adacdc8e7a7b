import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from './log/logger.ts';
import { closeWorkers } from './queue/close-workers.ts';
import type { Workers } from './queue/workers.ts';

export interface ShutdownParts {
  logger: Logger;
  /** How long running jobs may finish, in ms. */
  graceMs: number;
  /** Slack: stop taking commands and clicks first, then close. */
  intake: { stopIntake(): Promise<void>; stop(): Promise<void> };
  workers: Workers;
  queues: Queue[];
  redis: Redis;
  /** Called first: operations then stop between steps and resume on another replica. */
  onDraining: () => void;
}

/**
 * The graceful stop, once however often it is asked for: no new commands, running steps
 * finish within the grace period (then are left to resume elsewhere), then Redis closes.
 */
export function createShutdown(parts: ShutdownParts): () => Promise<void> {
  const { logger, graceMs, intake, workers, queues, redis } = parts;
  let stopping: Promise<void> | undefined;
  return () => {
    stopping ??= (async () => {
      parts.onDraining();
      logger.info({ graceSeconds: graceMs / 1000 }, 'stopping: no new commands, letting running steps finish');
      // Slack first: from here on, commands and clicks go to the other replicas. The ops endpoints stay
      // up while the running steps finish, so liveness holds and readiness says why it is out.
      await intake
        .stopIntake()
        .catch((error: unknown) => logger.warn({ err: (error as Error).message }, 'slack intake did not stop cleanly'));
      const running = workers.active.count;
      const { forced } = await closeWorkers([workers.read, workers.ops], { graceMs, active: workers.active });
      if (forced)
        logger.warn(
          { graceSeconds: graceMs / 1000, jobs: workers.active.count },
          'grace period over: running jobs left to resume on another replica',
        );
      else if (running > 0) logger.info({ jobs: running }, 'running jobs finished');
      await intake.stop().catch((error: unknown) => logger.warn({ err: (error as Error).message }, 'slack app did not stop cleanly'));
      await Promise.all(queues.map((q) => q.close())).catch(() => undefined);
      // QUIT waits for the replies still due; with Redis away it would only queue, so just drop the connection.
      if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
      else redis.disconnect();
      if (forced) {
        // Redis is closed, so an interrupted job can record nothing; this only ends its talosctl or tofu child.
        workers.read.cancelAllJobs('shutdown');
        workers.ops.cancelAllJobs('shutdown');
      }
      logger.info({ forced }, 'stopped');
      await new Promise<void>((resolve) => {
        logger.flush(() => resolve());
      });
    })();
    return stopping;
  };
}
