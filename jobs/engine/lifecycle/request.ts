import type { Operation } from '../../../src/ops/operation.ts';
import { INITIAL } from '../../../src/ops/state-machine.ts';
import { enqueuePreflight } from '../../../src/queue/operation-jobs.ts';
import type { MoveDeps } from './deps.ts';

/**
 * A request becomes an operation: stored, then its preflight queued, which plans it or (where
 * the request is its start, as for a snapshot) runs it. The job id is the operation's, so a
 * redelivered request queues one.
 */
export async function request(deps: MoveDeps, op: Operation): Promise<void> {
  if (!INITIAL.includes(op.state)) throw new Error(`operation ${op.id} cannot be requested in state ${op.state}`);
  await deps.store.create(op);
  await enqueuePreflight(deps.opsQueue, op.id);
}
