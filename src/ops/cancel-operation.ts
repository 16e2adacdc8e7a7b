import type { ChatPort } from '../chat/chat-port.ts';
import { operationRef } from '../chat/operation-link.ts';
import type { ClusterLock } from './cluster-lock.ts';
import type { Operation } from './operation.ts';
import type { OperationStore } from './operation-store.ts';
import { operationRefById, threadLink } from './thread-link.ts';
import { cancelRefusal } from './transitions.ts';

export interface CancelDeps {
  store: OperationStore;
  lock: ClusterLock;
  /** For the links to operations' threads in the answer. */
  chat: Pick<ChatPort, 'permalink'>;
  now: () => Date;
  /** Called once a cancel ended a waiting operation, to show it in Slack (queued, so the caller answers first). */
  onCancelled: (op: Operation) => Promise<void>;
}

/** States in which nothing runs, so a cancel ends the operation at once. */
const WAITING: readonly Operation['state'][] = ['preflight', 'planned', 'awaiting-approval', 'waiting-window', 'paused', 'failed'];

/**
 * Cancels between steps, never in the middle of a node: an operation that is waiting
 * (planned, awaiting approval or its window, paused, stopped) ends now and releases its
 * cluster; a running one is asked to stop and does so when its current step ends. A rollback
 * whose node is rebooting is not cancelled: that would free the cluster while the node is down.
 */
export async function cancelOperation(deps: CancelDeps, opId: string, by: string): Promise<{ reply: string }> {
  const now = deps.now().toISOString();
  let refusal: string | undefined;
  let was: Operation['state'] | undefined;
  const { op, changed } = await deps.store.update(opId, (o) => {
    was = o.state;
    refusal = cancelRefusal(o);
    if (refusal !== undefined) return undefined;
    if (WAITING.includes(o.state)) {
      return { ...o, state: 'cancelled', cancelRequestedBy: by, endedAt: now, reason: `cancelled by <@${by}>${o.state === 'failed' ? ' after the failure was handled' : ''}` };
    }
    if (o.state === 'running' && o.cancelRequestedBy === undefined) return { ...o, cancelRequestedBy: by };
    return undefined;
  });
  const ref = operationRef(op.id, await threadLink(deps, op));
  if (refusal !== undefined) return { reply: `${ref} cannot be cancelled now: ${refusal} Nothing changed.` };
  if (!changed) {
    if (op.state === 'running') return { reply: `${ref} is already stopping after its current step.` };
    return { reply: `${ref} has already ended (${op.state}); nothing to cancel.` };
  }
  if (op.state === 'cancelled') {
    // A preflight holds no lock of its own: it may have just taken (or been handed) one for the write that ends it,
    // which now finds the cancel and gives the lock back itself.
    if (was !== 'preflight') await deps.lock.release(op.cluster, op.id);
    await deps.onCancelled(op);
    // A stopped upgrade whose rollback took over its lock ends without freeing the cluster.
    const holder = await deps.lock.holder(op.cluster);
    if (holder !== undefined && holder !== op.id) return { reply: `Cancelled ${ref}; *${op.cluster}* stays locked by ${await operationRefById(deps, holder)}.` };
    return { reply: `Cancelled ${ref}; *${op.cluster}* is free for the next operation.` };
  }
  return { reply: `${ref} will stop after its current step; no node is left mid-upgrade. The thread will say when.` };
}
