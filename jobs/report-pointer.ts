import type { ChatPort } from '../src/port/chat-port.ts';
import { errorText } from '../src/chat/error-text.ts';
import { reportPointerMessage, type ReportKind } from '../src/chat/report-pointer.ts';
import type { Inventory, ClusterConfig } from '../src/config/inventory.ts';
import type { Logger } from '../src/log/logger.ts';
import type { HealthJobData } from '../src/queue/job-schemas.ts';

/**
 * Once a report's root message is posted in its cluster's channel: when it was asked for from
 * another cluster's channel, the requester learns there, privately, where it is, with a link.
 * A failure here is only logged: the report itself is posted.
 */
export async function pointRequesterToReport(
  chat: Pick<ChatPort, 'permalink' | 'ephemeral'>,
  log: Logger,
  data: HealthJobData,
  kind: ReportKind,
  rootTs: string,
): Promise<void> {
  if (data.askedIn === undefined || data.askedIn === data.channel) return;
  const link = await chat.permalink(data.channel, rootTs).catch(() => undefined);
  try {
    await chat.ephemeral(data.askedIn, data.requestedBy, reportPointerMessage(kind, data.cluster, data.channel, link));
  } catch (error) {
    log.warn({ err: errorText(error) }, 'requester not told where the report is');
  }
}

/**
 * The start of a report job (a health gate, the readiness gates): the cluster it is about, a
 * logger for it, and its data with the cluster's own channel, since the report stays in its
 * cluster's channel whatever channel the job data names.
 */
export function reportTarget<T extends { cluster: string; channel: string }>(
  deps: { inventory: Inventory; logger: Logger },
  jobId: string | undefined,
  parsed: T,
): { cluster: ClusterConfig; log: Logger; data: T } {
  const log = deps.logger.child({ op: jobId, cluster: parsed.cluster });
  const cluster = deps.inventory.clusters.find((c) => c.name === parsed.cluster);
  if (!cluster) throw new Error(`cluster ${parsed.cluster} is no longer in the inventory`);
  return { cluster, log, data: { ...parsed, channel: cluster.channel } };
}
