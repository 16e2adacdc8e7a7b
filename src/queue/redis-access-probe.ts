import { Redis } from 'ioredis';
import { ConfigError } from '../config/config-error.ts';
import type { RedisAccess } from '../config/redis-password-check.ts';
import { pollUntil, systemClock, type Clock } from '../time/clock.ts';

/** Pause between two attempts while the server does not answer, in ms. */
const RETRY_MS = 500;

/** One anonymous connection: what the server says, or the error that says it did not answer. */
async function askAnonymously(url: string, timeoutMs: number): Promise<{ access: RedisAccess } | { error: string }> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: Math.min(5000, timeoutMs),
    enableOfflineQueue: false,
    enableReadyCheck: false,
  });
  // The refusal can come as the answer to the client's own handshake (HELLO), which ioredis reports as an event.
  const refusals: string[] = [];
  client.on('error', (error: Error) => refusals.push(error.message));
  try {
    await client.connect();
    await client.ping();
    return { access: 'open' };
  } catch (error) {
    const messages = [...refusals, (error as Error).message];
    // NOAUTH (requirepass), NOPERM (an ACL default user without rights), WRONGPASS: the server wants credentials.
    if (messages.some((m) => /^(NOAUTH|NOPERM|WRONGPASS)\b/.test(m))) return { access: 'password-required' };
    return { error: messages[0] ?? 'no answer' };
  } finally {
    client.disconnect();
  }
}

/**
 * Asks the server itself whether a client without credentials may run a command: a URL without a
 * password says nothing about the server, and a URL with one is accepted by a server that has none
 * (it only answers `AUTH` with "called without any password configured for the default user").
 * Retries a server that does not answer yet until `timeoutMs` (it may be starting beside the bot).
 *
 * @throws {ConfigError} when the server did not answer within `timeoutMs`
 */
export async function probeRedisAccess(url: string, timeoutMs: number, clock: Clock = systemClock): Promise<RedisAccess> {
  const anonymous = new URL(url);
  anonymous.username = '';
  anonymous.password = '';
  const outcome = await pollUntil(clock, { timeoutMs, intervalMs: RETRY_MS }, async () => {
    const answer = await askAnonymously(anonymous.toString(), timeoutMs);
    return 'access' in answer ? { done: true, value: answer.access } : { done: false, pending: answer.error };
  });
  if (outcome.ok) return outcome.value;
  throw new ConfigError('REDIS_URL', [
    `the Redis at ${anonymous.host} did not answer within ${Math.round(timeoutMs / 1000)} s (${outcome.pending}), so whether it requires a password cannot be checked: start it, or fix the host and port`,
  ]);
}
