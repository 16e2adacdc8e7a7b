import type { Operation } from '../../../src/ops/operation.ts';
import { INITIAL } from '../../../src/ops/state-machine.ts';
import type { OpsJobName } from '../../../src/queue/job-schemas.ts';
import { enqueuePreflight } from '../../../src/queue/operation-jobs.ts';
import type { MoveDeps } from './deps.ts';

/** The job of a snapshot, which runs with its request and has no plan. */
const SNAPSHOT_JOB_NAME: OpsJobName = 'snapshot';

/**
 * A request becomes an operation: stored, then its first job queued (the preflight that plans
 * it, or a snapshot's run). The job id is the operation's, so a redelivered request queues one.
 */
export async function request(deps: MoveDeps, op: Operation): Promise<void> {
  if (!INITIAL.includes(op.state)) throw new Error(`operation ${op.id} cannot be requested in state ${op.state}`);
  await deps.store.create(op);
  if (op.kind === 'snapshot') await deps.opsQueue.add(SNAPSHOT_JOB_NAME, { opId: op.id }, { jobId: `${op.id}-snapshot` });
  else await enqueuePreflight(deps.opsQueue, op.id);
}
