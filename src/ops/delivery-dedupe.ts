import { randomUUID } from 'node:crypto';
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
      const key = `talos:delivery:${deliveryId}`;
      // A token of our own: a claim whose reply was lost (Redis restarting, the client sending it again) is still ours.
      const token = randomUUID();
      if ((await redis.set(key, token, 'EX', ttlSeconds, 'NX')) === 'OK') return true;
      return (await redis.get(key)) === token;
    },
  };
}
