import type { Redis } from 'ioredis';

/**
 * Slack may deliver one command or click more than once (retries, reconnect replays,
 * several replicas). The first delivery claims its id; later ones are ignored. The TTL
 * outlives Slack's last retry (about 5 minutes) with room to spare.
 */
export interface DeliveryDedupe {
  claim(deliveryId: string): Promise<boolean>;
}

export function createDeliveryDedupe(redis: Redis, ttlSeconds = 3600): DeliveryDedupe {
  return {
    async claim(deliveryId) {
      return (await redis.set(`talos:delivery:${deliveryId}`, '1', 'EX', ttlSeconds, 'NX')) === 'OK';
    },
  };
}
