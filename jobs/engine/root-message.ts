import { errorText } from '../../src/chat/error-text.ts';
import type { ChatMessage } from '../../src/port/chat-port.ts';
import { operationRootMessage } from '../../src/chat/operation-root.ts';
import type { Operation } from '../../src/ops/operation.ts';
import type { OpsJobDeps } from './job-context.ts';
import type { Playbook } from './playbook.ts';

/** The operation's root message, with the text its playbook declares where the kind has its own (see `Playbook.rootText`). */
export function rootMessage(op: Operation, playbook: Pick<Playbook, 'rootText'> | undefined): ChatMessage {
  const message = operationRootMessage(op);
  const text = playbook?.rootText?.(op);
  return text === undefined ? message : { ...message, text };
}

/**
 * The root message is a view of the stored operation, and the next refresh repaints it: a
 * failed edit (Slack away longer than the client retries) is logged, never a step's failure.
 * `playbook`: the operation's, where its kind declares a root text of its own.
 */
export async function refreshRoot(deps: Pick<OpsJobDeps, 'chat' | 'logger'>, op: Operation, playbook?: Pick<Playbook, 'rootText'>): Promise<void> {
  if (op.rootTs === undefined) return;
  await deps.chat.update(op.channel, op.rootTs, rootMessage(op, playbook)).catch((error: unknown) => {
    deps.logger.warn({ op: op.id, cluster: op.cluster, err: errorText(error) }, 'root message not updated');
  });
}
