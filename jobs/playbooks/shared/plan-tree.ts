import type { ClusterConfig } from '../../../src/config/inventory.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';

/** The bot's copy of a cluster's `terraformRepo`; a cluster without one has its checkout on a volume. */
export function repoOf(deps: Pick<PlaybookDeps, 'repo'>, cluster: ClusterConfig): NonNullable<PlaybookDeps['repo']> {
  if (deps.repo === undefined)
    throw new StepFailure(`${cluster.name} names a terraformRepo, but this bot fetches none; nothing was applied.`);
  return deps.repo;
}

/**
 * Where this plan runs: the cluster's `terraformDir`, or, with a `terraformRepo`, the bot's copy just
 * fetched at the ref's newest commit and initialised (`tofu init` keeps the backend and providers in
 * the ignored `.terraform/`, so the copy stays clean). The commit the plan records is the fetched one.
 */
export async function planTree(deps: PlaybookDeps, cluster: ClusterConfig, signal?: AbortSignal): Promise<string> {
  if (cluster.terraformRepo === undefined) return cluster.terraformDir;
  const { dir } = await repoOf(deps, cluster).fetch(cluster, signal);
  await deps.tofu.run(dir, ['init', '-input=false', '-no-color'], { signal, timeoutMs: deps.timeouts.stepMs });
  return dir;
}
