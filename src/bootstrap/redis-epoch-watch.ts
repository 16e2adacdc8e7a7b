import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { redisLostMessage, redisLostReadingMessage, redisLostUnreadMessage } from '../chat/redis-lost.ts';
import type { GateReport } from '../health/health-gate.ts';
import type { ClusterConfig } from '../config/inventory.ts';
import type { Logger } from '../log/logger.ts';
import { LOSS_TOLD_PREFIX, type RedisEpoch } from '../ops/redis-epoch.ts';
import type { ChatPort } from '../port/chat-port.ts';

export interface EpochWatch {
  stop(): void;
  /** One check, and the telling it leads to; what the timer runs (tests call it too). */
  tick(): Promise<void>;
}

/**
 * Checks the Redis epoch every `intervalMs` while the bot runs, not only at start and when `/readyz` is
 * asked: a timer of the composition root, because a flush also empties BullMQ's schedules, so a scheduled
 * job would stop checking exactly when it matters. Once the loss is seen, each cluster's channel is told
 * once: a SET NX mark per cluster, so replicas and polls agree on who tells; a post that failed gives its
 * mark back and the next poll tries again. The marks are bot data, so a replica that starts on the emptied
 * Redis refuses as well, until a re-seed clears them.
 */
export function startEpochWatch(parts: {
  epoch: RedisEpoch;
  redis: Redis;
  clusters: () => readonly ClusterConfig[];
  chat: ChatPort;
  logger: Logger;
  intervalMs: number;
  /** The standard health gate, run on each cluster right after it was told: what the bot reads instead of what it lost. */
  observe?: (cluster: ClusterConfig) => Promise<GateReport>;
}): EpochWatch {
  const { epoch, redis, chat, logger } = parts;
  const told = new Set<string>();

  async function tell(cluster: ClusterConfig, reason: string): Promise<void> {
    const mark = `${LOSS_TOLD_PREFIX}${cluster.name}`;
    const taken = await redis.set(mark, new Date().toISOString(), 'NX');
    told.add(cluster.name);
    if (taken !== 'OK') return;
    let ts: string;
    try {
      ({ ts } = await chat.post(cluster.channel, redisLostMessage(cluster, reason), { key: `redis-lost-${cluster.name}-${randomUUID()}` }));
      logger.warn({ cluster: cluster.name }, 'the loss of Redis data was told in the cluster channel');
    } catch (error) {
      told.delete(cluster.name);
      await redis.del(mark).catch(() => undefined);
      logger.error(
        { cluster: cluster.name, err: (error as Error).message },
        'the loss of Redis data could not be told; the next check tries again',
      );
      return;
    }
    if (parts.observe === undefined) return;
    // Read-only, and by the replica that told: the channel sees the cluster as it is, not as the lost records had it.
    const reading = await parts
      .observe(cluster)
      .then(redisLostReadingMessage, (error: unknown) => redisLostUnreadMessage(cluster, (error as Error).message));
    await chat
      .reply(cluster.channel, ts, reading, { key: `redis-lost-reading-${cluster.name}-${randomUUID()}` })
      .catch((error: unknown) =>
        logger.warn({ cluster: cluster.name, err: (error as Error).message }, 'the reading after the Redis loss was not posted'),
      );
  }

  async function check(): Promise<void> {
    try {
      if (await epoch.check()) return;
      const reason = epoch.lostReason() ?? 'Redis lost the data the bot keeps';
      for (const cluster of parts.clusters()) if (!told.has(cluster.name)) await tell(cluster, reason);
    } catch (error) {
      // Redis unreachable: `/readyz` says so; the next poll checks again.
      logger.warn({ err: (error as Error).message }, 'the Redis epoch could not be checked; the next poll tries again');
    }
  }

  // One check at a time: a poll that comes while one runs waits for it rather than telling twice.
  let current: Promise<void> | undefined;
  const tick = (): Promise<void> => (current ??= check().finally(() => (current = undefined)));

  const timer = setInterval(() => void tick(), parts.intervalMs);
  timer.unref();
  // At once too: a loss seen at start (bot data without an epoch) is told without waiting a poll.
  void tick();
  return { stop: () => clearInterval(timer), tick };
}
