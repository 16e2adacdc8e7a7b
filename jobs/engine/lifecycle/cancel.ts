import { operationRef } from '../../../src/chat/operation-link.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { WAITING } from '../../../src/ops/state-machine.ts';
import { threadLink } from '../../../src/ops/thread-link.ts';
import { operationRefById } from '../../../src/chat/operation-link.ts';
import { cancelRefusal } from '../../../src/ops/transitions.ts';
import { refused, type MoveDeps, type MoveResult } from './deps.ts';
import type { OperationClick } from './start.ts';

/**
 * Cancels between steps, never in the middle of a node: an operation that is waiting
 * (planned, awaiting approval or its window, paused, stopped) ends now and releases its
 * cluster; a running one is asked to stop and does so when its current step ends. A rollback
 * whose node is rebooting is not cancelled: that would free the cluster while the node is down.
 */
export async function cancel(deps: MoveDeps, opId: string, by: string): Promise<MoveResult> {
  const now = deps.now().toISOString();
  let refusal: string | undefined;
  let was: Operation['state'] | undefined;
  const { op, changed } = await deps.store.update(opId, (o) => {
    was = o.state;
    refusal = cancelRefusal(o, (op) => deps.policy.cancelRefusal(op));
    if (refusal !== undefined) return undefined;
    if (WAITING.includes(o.state)) {
      return {
        ...o,
        state: 'cancelled',
        cancelRequestedBy: by,
        endedAt: now,
        reason: `cancelled by <@${by}>${o.state === 'failed' ? ' after the failure was handled' : ''}`,
      };
    }
    if (o.state === 'running' && o.cancelRequestedBy === undefined) return { ...o, cancelRequestedBy: by };
    return undefined;
  });
  const ref = operationRef(op.id, await threadLink(deps, op));
  if (refusal !== undefined) return refused('not-cancellable', `${ref} cannot be cancelled now: ${refusal} Nothing changed.`);
  if (!changed) {
    if (op.state === 'running') return refused('already', `${ref} is already stopping after its current step.`);
    return refused('stale', `${ref} has already ended (${op.state}); nothing to cancel.`);
  }
  if (op.state === 'cancelled') {
    // A preflight holds no lock of its own: it may have just taken (or been handed) one for the write that ends it,
    // which now finds the cancel and gives the lock back itself.
    if (was !== 'preflight') await deps.lock.release(op.cluster, op.id);
    await deps.onCancelled(op);
    // A stopped upgrade whose rollback took over its lock ends without freeing the cluster.
    const holder = await deps.lock.holder(op.cluster);
    if (holder !== undefined && holder !== op.id)
      return { ok: true, op, reply: `Cancelled ${ref}; *${op.cluster}* stays locked by ${await operationRefById(deps, holder)}.` };
    return { ok: true, op, reply: `Cancelled ${ref}; *${op.cluster}* is free for the next operation.` };
  }
  return { ok: true, op, reply: `${ref} will stop after its current step; no node is left mid-upgrade. The thread will say when.` };
}

/**
 * The Cancel of a plan, or of a stop, still offered by this button; its answer is the cancel's either way.
 * A stop's Cancel carries the stop's nonce: the button of an earlier stop, retried since, cancels nothing.
 */
export async function cancelPlan(deps: MoveDeps, click: OperationClick): Promise<MoveResult> {
  const { op } = click;
  const current = op.state === 'planned' ? op.planNonce === click.nonce : op.state === 'failed' && op.stopNonce === click.nonce;
  if (!current)
    return refused('stale', `\`${op.id}\` is ${op.state}; this Cancel button is no longer valid. Use \`/talos cancel ${op.id}\`.`);
  return cancel(deps, op.id, click.user);
}
