import { isIP } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';

/**
 * Options of the bot's Redis connection for a `REDIS_URL`; ioredis reads the
 * credentials, host, port and database from the URL itself.
 *
 * `rediss://` connects over TLS, verified against Node's CA store (system CAs, plus
 * the file in `NODE_EXTRA_CA_CERTS` for a private CA). The host name is sent as SNI
 * explicitly: managed Redis services behind a TLS proxy route on it.
 */
export function redisOptions(url: string): RedisOptions {
  // null: BullMQ's workers block on Redis and must never give up on a command.
  const options: RedisOptions = { maxRetriesPerRequest: null };
  const parsed = new URL(url);
  if (parsed.protocol === 'rediss:') {
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    options.tls = isIP(host) === 0 ? { servername: host } : {};
  }
  return options;
}

/** The one Redis connection the composition root shares between queues, workers and stores. */
export function connectRedis(url: string): Redis {
  return new Redis(url, redisOptions(url));
}
