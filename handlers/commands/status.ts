import { shownOperations, statusMessage, statusSummaryText } from '../../src/chat/status-message.ts';
import { clusterSummaries } from '../../src/ops/cluster-summary.ts';
import { threadLinks } from '../../src/ops/thread-link.ts';
import { presentationOf } from '../../jobs/playbooks/index.ts';
import type { CommandHandler } from './command-context.ts';

/**
 * `/talos status`: in a cluster's channel, that cluster's state in words, then its operations with their buttons.
 * Anywhere else (a direct message, a channel of no cluster) only which operation holds each
 * cluster, since whoever can type there may not be a member of the clusters' channels.
 */
export const status: CommandHandler<'status'> = async (_command, slack, deps) => {
  const here = deps.inventory.clusters.filter((c) => c.channel === slack.channel_id);
  if (here.length === 0) {
    const { summaries, links } = await clusterSummaries(deps.inventory.clusters, deps);
    return { reply: statusSummaryText(summaries, links) };
  }
  const byCluster = await Promise.all(
    here.map(async (c) => {
      // An unreadable signal leaves the line out rather than failing the status.
      const kept =
        deps.signals === undefined ? undefined : await deps.signals.read(c.name).catch(() => ({ gate: undefined, declared: undefined }));
      // Names from the last look at the cluster, for an operation that knows only its node's address; none is no failure.
      const look = await deps.observedEstates?.read(c.name).catch(() => undefined);
      return {
        cluster: c,
        holder: await deps.lock.holder(c.name),
        ops: await deps.store.listForCluster(c.name, 10),
        gate: kept === undefined ? undefined : { last: kept.gate, declared: kept.declared },
        ...(look === undefined ? {} : { names: look.nodeNames }),
      };
    }),
  );
  const linked = await Promise.all(
    byCluster.map(async ({ holder, ops, gate }) => {
      const { active, recent } = shownOperations(ops);
      const fetch = async (id: string | undefined) =>
        id === undefined || ops.some((o) => o.id === id) ? undefined : await deps.store.get(id).catch(() => undefined);
      // The holder and the operation that ran the newest gate are linked too, although older than the operations listed.
      const origin = gate?.last?.origin;
      const extra = await Promise.all([fetch(holder), fetch(origin?.by === 'operation' ? origin.opId : undefined)]);
      return [...active, ...recent, ...extra.filter((o) => o !== undefined)];
    }),
  );
  const message = statusMessage(byCluster, presentationOf, await threadLinks(deps, linked.flat()));
  return { reply: message.text, blocks: message.blocks };
};
