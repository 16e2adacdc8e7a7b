import { errorText } from '../../src/chat/error-text.ts';
import { operationRootMessage } from '../../src/chat/operation-root.ts';
import type { Operation } from '../../src/ops/operation.ts';
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
}
