import { ConfigError } from './config-error.ts';

/** What the Redis server says about keeping its data: its `appendonly` and `maxmemory-policy`, or that it refused `CONFIG`. */
export type RedisDurability = { appendonly: string; maxmemoryPolicy: string } | { refused: string };

/**
 * The start-up rule: with a production cluster in the inventory, the cluster lock and the operations
 * must survive a Redis restart (AOF on) and memory pressure (no eviction). Without either, a lost lock
 * lets a second operation start on a cluster whose node is rebooting. `REDIS_DURABILITY_CHECK=warn`
 * accepts such a Redis (or one that cannot be asked, such as a managed one) with a warning.
 *
 * @returns a warning to log at every start when a Redis that fails the rule is accepted; undefined otherwise
 * @throws {ConfigError} for a Redis that fails the rule without the explicit acceptance
 */
export function redisDurabilityRule(
  durability: RedisDurability,
  input: { host: string; productionClusters: string[]; check: 'enforce' | 'warn' },
): string | undefined {
  if (input.productionClusters.length === 0) return undefined;
  const problems: string[] = [];
  if ('refused' in durability) {
    problems.push(
      `the Redis at ${input.host} does not let the bot read its settings (CONFIG GET: ${durability.refused}), as a managed Redis often does, so whether it keeps its data cannot be checked`,
    );
  } else {
    if (durability.appendonly !== 'yes')
      problems.push(
        `the Redis at ${input.host} runs without AOF (appendonly is ${durability.appendonly}), so a restart loses the locks written since the last save`,
      );
    if (durability.maxmemoryPolicy !== 'noeviction')
      problems.push(
        `the Redis at ${input.host} evicts keys under memory pressure (maxmemory-policy is ${durability.maxmemoryPolicy}), so a cluster lock can disappear`,
      );
  }
  if (problems.length === 0) return undefined;
  const clusters = input.productionClusters.join(', ');
  if (input.check === 'warn')
    return `${problems.join('; ')}; REDIS_DURABILITY_CHECK=warn accepts that for the production clusters ${clusters}: a lost lock lets a second operation start on a cluster that is mid-change`;
  throw new ConfigError(
    'REDIS_URL',
    problems.map(
      (p) =>
        `${p}, and the inventory has production clusters (${clusters}) whose locks and operations it holds: ` +
        'run Redis with appendonly yes and maxmemory-policy noeviction, or set REDIS_DURABILITY_CHECK=warn to accept the risk',
    ),
  );
}
