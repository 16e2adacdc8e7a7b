import { errorText } from '../../src/chat/error-text.ts';
import { operationRootMessage } from '../../src/chat/operation-root.ts';
import type { Operation } from '../../src/ops/operation.ts';
import type { Presentation } from '../../src/chat/presentation.ts';
import type { ChatPort } from '../../src/port/chat-port.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { OpsJobDeps } from './job-context.ts';

/**
 * The root message is a view of the stored operation, and the next refresh repaints it: a
 * failed edit (Slack away longer than the client retries) is logged, never a step's failure.
 */
export async function refreshRoot(deps: Pick<OpsJobDeps, 'chat' | 'logger' | 'presentations' | 'now'>, op: Operation): Promise<void> {
  if (op.rootTs === undefined) return;
  await deps.chat
    .update(op.channel, op.rootTs, operationRootMessage(op, deps.presentations(op.kind), deps.now()))
    .catch((error: unknown) => {
      deps.logger.warn({ op: op.id, cluster: op.cluster, err: errorText(error) }, 'root message not updated');
    });
  // While it runs the root's board tells the progress; the paged message changes only when the run waits or ends.
  if (op.state !== 'running') await refreshPaged(deps, op, deps.presentations(op.kind));
}

/**
 * The message that paged the approvers, redrawn as the operation stands once it left its plan: the
 * buttons go, the outcome stays. A failed edit is logged; the next repaint draws it again.
 */
export async function refreshPaged(
  deps: { chat: Pick<ChatPort, 'update'>; logger?: Logger },
  op: Operation,
  presentation: Presentation,
): Promise<void> {
  const paged = presentation.paged;
  if (paged === undefined || op.state === 'planned' || op.state === 'preflight') return;
  const entry = op.audit.find((e) => e.event === paged.event && e.ts !== undefined);
  const message = entry === undefined ? undefined : paged.message(op);
  if (entry?.ts === undefined || message === undefined) return;
  await deps.chat
    .update(op.channel, entry.ts, { ...message, text: `${message.text}\n#${entry.seq} ${entry.event}` })
    .catch((error: unknown) => {
      deps.logger?.warn({ op: op.id, cluster: op.cluster, err: errorText(error) }, 'paged message not updated');
    });
}
