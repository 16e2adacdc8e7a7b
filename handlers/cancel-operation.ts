import type { ClusterLock } from '../src/ops/cluster-lock.ts';
import type { Operation } from '../src/ops/operation.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';

export interface CancelDeps {
  store: OperationStore;
  lock: ClusterLock;
  now: () => Date;
  onCancelled: (op: Operation) => Promise<void>;
}

/**
 * Cancels between steps, never in the middle of a node: an operation that is waiting
 * (planned, awaiting approval, paused, stopped) ends now and releases its cluster; a
 * running one is asked to stop and does so when its current step ends.
 */
export async function cancelOperation(deps: CancelDeps, opId: string, by: string): Promise<{ reply: string }> {
  const now = deps.now().toISOString();
  const { op, changed } = await deps.store.update(opId, (o) => {
    if (['planned', 'awaiting-approval', 'paused', 'failed', 'preflight'].includes(o.state)) {
      return { ...o, state: 'cancelled', cancelRequestedBy: by, endedAt: now, reason: `cancelled by <@${by}>${o.state === 'failed' ? ' after the failure was handled' : ''}` };
    }
    if (o.state === 'running' && o.cancelRequestedBy === undefined) return { ...o, cancelRequestedBy: by };
    return undefined;
  });
  if (!changed) {
    if (op.state === 'running') return { reply: `\`${op.id}\` is already stopping after its current step.` };
    return { reply: `\`${op.id}\` has already ended (${op.state}); nothing to cancel.` };
  }
  if (op.state === 'cancelled') {
    await deps.lock.release(op.cluster, op.id);
    await deps.onCancelled(op);
    return { reply: `Cancelled \`${op.id}\`; *${op.cluster}* is free for the next operation.` };
  }
  return { reply: `\`${op.id}\` will stop after its current step; no node is left mid-upgrade. The thread will say when.` };
}
