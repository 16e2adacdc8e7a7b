import type { Job } from 'bullmq';
import type { ChatPort } from '../src/port/chat-port.ts';
import { escapeMrkdwn, formatTime, section } from '../src/chat/blocks.ts';
import { operationTitle } from '../src/chat/operation-title.ts';
import type { PresentationLookup } from '../src/chat/presentation.ts';
import { commitText, maintenanceRecordMarkdown, terraformFollowUpText } from '../src/chat/maintenance-record.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';
import type { RecordJobData } from '../src/queue/job-schemas.ts';

export interface RecordJobDeps {
  store: Pick<OperationStore, 'get'>;
  chat: ChatPort;
  /** How each kind is named to a person ("Replacement of talos-prd-cp-2"); without it, the kind's own name. */
  presentations?: PresentationLookup;
}

/** `/talos record <op>`: the maintenance record, summarised in the operation's thread with the full record attached as Markdown. */
export function createRecordJob(deps: RecordJobDeps) {
  return async (job: Job<RecordJobData>): Promise<void> => {
    const { opId, requestedBy } = job.data;
    const op = await deps.store.get(opId);
    if (!op) return;
    const followUp = terraformFollowUpText(op);
    const presentation = deps.presentations?.(op.kind);
    const title =
      presentation === undefined ? `${op.kind}${op.target.version ? ` to ${op.target.version}` : ''}` : operationTitle(op, presentation);
    const snapshot = op.snapshot ? `snapshot \`${op.snapshot.id}\`` : 'no snapshot';
    const text =
      `📒 Maintenance record of \`${op.id}\` (${escapeMrkdwn(title)}, ${op.state}), requested by <@${requestedBy}>: ` +
      `commit ${commitText(op)}, ${snapshot}, started ${formatTime(op.startedAt ?? op.createdAt)}, ended ${op.endedAt ? formatTime(op.endedAt) : 'not yet'}, validation: ${op.validation ?? 'none'}${followUp === undefined ? '' : `; ${followUp}`}.`;
    // Keyed by the request: each /talos record posts its own summary, once.
    const once = { key: `${op.id}-${job.id}`, maybeSent: job.attemptsStarted > 1 };
    const threadTs = op.rootTs ?? (await deps.chat.post(op.channel, { text, blocks: [section(text)] }, once)).ts;
    if (op.rootTs) await deps.chat.reply(op.channel, threadTs, { text, blocks: [section(text)] }, once);
    await deps.chat.upload(op.channel, threadTs, {
      filename: `${op.id}-maintenance-record.md`,
      title: `Maintenance record ${op.id}`,
      content: maintenanceRecordMarkdown(op, undefined, presentation),
    });
  };
}
