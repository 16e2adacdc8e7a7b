import type { Config } from '../config/env.ts';
import type { Inventory } from '../config/inventory.ts';
import type { Logger } from '../log/logger.ts';
import type { ScheduledGateState } from '../ops/scheduled-gate-state.ts';
import { scheduleReconcile, scheduleRetentionSweep } from '../queue/jobs.ts';
import { gateSchedulerCluster, syncSchedules } from '../queue/schedules.ts';
import type { Infrastructure } from './infrastructure.ts';

const errorMessage = (error: unknown): string => (error as Error).message;

/**
 * Puts the job schedulers in place without holding up the start: a Redis that fails here fails
 * the bot's commands too, and the next start schedules again.
 */
export function startSchedules(parts: {
  config: Config;
  inventory: Inventory;
  logger: Logger;
  queues: Infrastructure['queues'];
  gateState: ScheduledGateState;
}): void {
  const { config, inventory, logger, queues, gateState } = parts;
  void scheduleReconcile(queues.ops, Math.max(5000, 2 * config.timeouts.jobLockMs)).catch((error: unknown) =>
    logger.warn({ err: errorMessage(error) }, 'cannot schedule the operation reconciler; it is scheduled at the next start'),
  );
  void scheduleRetentionSweep(queues.ops).catch((error: unknown) =>
    logger.warn({ err: errorMessage(error) }, 'cannot schedule the retention sweep; it is scheduled at the next start'),
  );
  void syncSchedules(queues, inventory)
    .then(async ({ upserted, removed }) => {
      for (const cluster of removed.map(gateSchedulerCluster)) if (cluster !== undefined) await gateState.forget(cluster);
      logger.info({ schedules: upserted, removed }, 'cluster schedules in place');
    })
    .catch((error: unknown) =>
      logger.warn({ err: errorMessage(error) }, "cannot schedule the clusters' gates and snapshots; they are scheduled at the next start"),
    );
}
