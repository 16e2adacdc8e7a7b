import { context, escapeMrkdwn, formatDuration, preformatted, section } from '../../../src/chat/blocks.ts';
import { shortHashes } from '../../../src/chat/short-hashes.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';

/** Lines of `tofu apply` output shown in the thread; the full log is attached. */
export const APPLY_TAIL_LINES = 15;

export interface ApplyProgress {
  cluster: string;
  outcome: 'running' | 'done' | 'failed';
  lines: string[];
  elapsedMs: number;
  /** `Apply complete! Resources: …`, once tofu printed it. */
  summary?: string;
}

/** The one thread message `tofu apply` reports in, edited as it goes: the newest lines, trimmed. */
export function applyProgressMessage(progress: ApplyProgress): ChatMessage {
  const head =
    progress.outcome === 'running'
      ? `⏳ *tofu apply* of the reviewed plan on ${escapeMrkdwn(progress.cluster)} is running (${formatDuration(progress.elapsedMs)})`
      : progress.outcome === 'done'
        ? `✅ *tofu apply* finished on ${escapeMrkdwn(progress.cluster)} in ${formatDuration(progress.elapsedMs)}${progress.summary ? `: ${escapeMrkdwn(progress.summary)}` : ''}`
        : `❌ *tofu apply* failed on ${escapeMrkdwn(progress.cluster)} after ${formatDuration(progress.elapsedMs)}; nothing is reverted automatically`;
  // Full hashes (schematic ids in the outputs) stay in the attached log.
  const tail = progress.lines.slice(-APPLY_TAIL_LINES).map(shortHashes);
  const trimmed =
    progress.lines.length > tail.length
      ? `Last ${tail.length} of ${progress.lines.length} lines; the full log is attached when it ends.`
      : undefined;
  const blocks = [section(head)];
  if (tail.length > 0) blocks.push(preformatted(tail));
  if (trimmed !== undefined) blocks.push(context(trimmed));
  return { text: head, blocks };
}
