import type { PollOptions } from '../../../src/time/clock.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';

/**
 * The bound and pace of a step's wait on the cluster, for `pollUntil` on `deps.clock`: a look every
 * `POLL` interval until the bound (default the node-ready timeout), ended early by the job's signal.
 */
export function clusterWait(
  deps: Pick<PlaybookDeps, 'timeouts'>,
  signal: AbortSignal | undefined,
  timeoutMs: number = deps.timeouts.nodeReadyMs,
): PollOptions {
  return { timeoutMs, intervalMs: deps.timeouts.pollMs, ...(signal ? { signal } : {}) };
}
