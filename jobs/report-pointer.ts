import type { ChatPort } from '../src/port/chat-port.ts';
import { errorText } from '../src/chat/error-text.ts';
import { reportPointerMessage, type ReportKind } from '../src/chat/report-pointer.ts';
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
