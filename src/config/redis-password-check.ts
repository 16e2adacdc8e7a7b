import { Redis } from 'ioredis';
import { ConfigError } from './config-error.ts';

/** What the Redis server says about clients without a password. */
export type RedisAccess = 'password-required' | 'open';

/**
 * Asks the server itself whether a client without credentials may run a command: a URL without a
 * password says nothing about the server, and a URL with one is accepted by a server that has none
 * (it only answers `AUTH` with "called without any password configured for the default user").
 * Retries a server that does not answer yet until `timeoutMs` (it may be starting beside the bot).
 */
export async function probeRedisAccess(url: string, timeoutMs: number): Promise<RedisAccess> {
  const anonymous = new URL(url);
  anonymous.username = '';
  anonymous.password = '';
  const deadline = Date.now() + timeoutMs;
  let lastError = 'no answer';
  for (;;) {
    const client = new Redis(anonymous.toString(), { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: Math.min(5000, timeoutMs), enableOfflineQueue: false, enableReadyCheck: false });
    // The refusal can come as the answer to the client's own handshake (HELLO), which ioredis reports as an event.
    const refusals: string[] = [];
    client.on('error', (error: Error) => refusals.push(error.message));
    try {
      await client.connect();
      await client.ping();
      return 'open';
    } catch (error) {
      const messages = [...refusals, (error as Error).message];
      // NOAUTH (requirepass), NOPERM (an ACL default user without rights), WRONGPASS: the server wants credentials.
      if (messages.some((m) => /^(NOAUTH|NOPERM|WRONGPASS)\b/.test(m))) return 'password-required';
      lastError = messages[0] ?? 'no answer';
    } finally {
      client.disconnect();
    }
    if (Date.now() >= deadline) {
      throw new ConfigError('REDIS_URL', [
        `the Redis at ${anonymous.host} did not answer within ${Math.round(timeoutMs / 1000)} s (${lastError}), so whether it requires a password cannot be checked: start it, or fix the host and port`,
      ]);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * The start-up rule: with a production cluster in the inventory, a Redis that lets anyone in holds
 * the operations, approvals and locks of production, so the bot refuses it unless the operator
 * accepts that explicitly with `ALLOW_INSECURE_REDIS=true`.
 *
 * @returns a warning to log at every start when an open Redis is accepted; undefined otherwise
 * @throws {ConfigError} for an open Redis without the explicit acceptance
 */
export function redisAccessRule(access: RedisAccess, input: { url: string; productionClusters: string[]; allowInsecure: boolean }): string | undefined {
  if (access === 'password-required' || input.productionClusters.length === 0) return undefined;
  const url = new URL(input.url);
  const why =
    url.password === ''
      ? `the Redis at ${url.host} answers clients without a password`
      : `REDIS_URL carries a password, but the Redis at ${url.host} has none configured and answers anyone without it`;
  const clusters = input.productionClusters.join(', ');
  if (input.allowInsecure) return `${why}; ALLOW_INSECURE_REDIS=true accepts that for the production clusters ${clusters}: anyone who reaches it can forge approvals and operations`;
  throw new ConfigError('REDIS_URL', [
    `${why}, and the inventory has production clusters (${clusters}) whose operations, approvals and locks it would hold: ` +
      'set a password on the server (requirepass, or an ACL user) and put it in REDIS_URL as redis://:<password>@host:port (rediss:// for TLS), ' +
      'or set ALLOW_INSECURE_REDIS=true to accept an unprotected Redis',
  ]);
}
