import type { ClusterConfig } from '../config/inventory.ts';
import type { ClusterLock } from './cluster-lock.ts';
import type { Operation } from './operation.ts';
import { threadLinks, type ThreadLinkDeps } from './thread-link.ts';

/**
 * What anyone may see of a cluster outside its channel: where its channel is and which operation
 * holds it. Targets, nodes, versions, approvals, verdicts and who started what stay with the
 * people of the cluster's channel, who may not be everyone who can read a direct message.
 */
export interface ClusterSummary {
  cluster: string;
  channel: string;
  /** The id of the operation that holds the cluster's lock. */
  holder: string | undefined;
}

export interface ClusterSummaryDeps extends ThreadLinkDeps {
  lock: Pick<ClusterLock, 'holder'>;
}

/** The summaries of `clusters`, with the links to the holders' threads by operation id. */
export async function clusterSummaries(
  clusters: readonly ClusterConfig[],
  deps: ClusterSummaryDeps,
): Promise<{ summaries: ClusterSummary[]; links: Map<string, string> }> {
  const summaries = await Promise.all(
    clusters.map(async (c) => ({ cluster: c.name, channel: c.channel, holder: await deps.lock.holder(c.name) })),
  );
  const holders = await Promise.all(summaries.map(async (s) => (s.holder === undefined ? undefined : deps.store.get(s.holder))));
  const links = await threadLinks(
    deps,
    holders.filter((o): o is Operation => o !== undefined),
  );
  return { summaries, links };
}
