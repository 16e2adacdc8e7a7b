import { ConfigError } from './config-error.ts';

/** What the Redis server says about clients without a password (see `probeRedisAccess`). */
export type RedisAccess = 'password-required' | 'open';

/**
 * The start-up rule: with a production cluster in the inventory, a Redis that lets anyone in holds
 * the operations, approvals and locks of production, so the bot refuses it unless the operator
 * accepts that explicitly with `ALLOW_INSECURE_REDIS=true`.
 *
 * @returns a warning to log at every start when an open Redis is accepted; undefined otherwise
 * @throws {ConfigError} for an open Redis without the explicit acceptance
 */
export function redisAccessRule(
  access: RedisAccess,
  input: { url: string; productionClusters: string[]; allowInsecure: boolean },
): string | undefined {
  if (access === 'password-required' || input.productionClusters.length === 0) return undefined;
  const url = new URL(input.url);
  const why =
    url.password === ''
      ? `the Redis at ${url.host} answers clients without a password`
      : `REDIS_URL carries a password, but the Redis at ${url.host} has none configured and answers anyone without it`;
  const clusters = input.productionClusters.join(', ');
  if (input.allowInsecure)
    return `${why}; ALLOW_INSECURE_REDIS=true accepts that for the production clusters ${clusters}: anyone who reaches it can forge approvals and operations`;
  throw new ConfigError('REDIS_URL', [
    `${why}, and the inventory has production clusters (${clusters}) whose operations, approvals and locks it would hold: ` +
      'set a password on the server (requirepass, or an ACL user) and put it in REDIS_URL as redis://:<password>@host:port (rediss:// for TLS), ' +
      'or set ALLOW_INSECURE_REDIS=true to accept an unprotected Redis',
  ]);
}
