import { awaitsPosting } from './engine/audit.ts';
import type { ClusterConfig } from '../src/config/inventory.ts';
import type { Operation } from '../src/ops/operation.ts';
import { FINISHED } from '../src/ops/state-machine.ts';
import { enqueueRun, runJobId } from '../src/queue/jobs.ts';
import { outsideWindowRefusal } from '../src/chat/window-refusal.ts';
import type { OpsJobDeps } from './engine/job-context.ts';

/** How many of the newest operations each pass looks at. */
const RECENT = 50;

/** A run should be walking it: it is running, waits on an approval request that was never posted, or on a window that is open now. */
function needsRun(op: Operation, cluster: ClusterConfig | undefined, now: Date): boolean {
  if (op.state === 'running') return true;
  if (op.state === 'waiting-window') return cluster !== undefined && outsideWindowRefusal(cluster, now) === undefined;
  const latest = op.approvals.at(-1);
  return op.state === 'awaiting-approval' && latest?.state === 'pending' && latest.messageTs === '';
}

/**
 * Keeps every operation moving, on a schedule shared by the replicas. A run ends early when
 * Slack or Redis fails under it, and a click's handler can die between recording the
 * decision and queueing the run; either leaves a running operation that nothing walks, and
 * that not even a cancel can end (a cancel only asks the walk to stop). Such an operation
 * gets a run again; the run lease keeps it from racing one that is still going. Audit
 * replies that could not be posted are posted here too, and a finished operation's lock is
 * released.
 */
export type ReconcileJobDeps = Pick<
  OpsJobDeps,
  'inventory' | 'store' | 'lock' | 'audit' | 'runLease' | 'opsQueue' | 'logger' | 'clock' | 'playbooks'
>;

export function createReconcileJob(deps: ReconcileJobDeps) {
  return async (): Promise<void> => {
    // A run that died between ending its operation and releasing the cluster leaves a lock no cancel can free.
    for (const cluster of deps.inventory.clusters) {
      const holder = await deps.lock.holder(cluster.name);
      const op = holder === undefined ? undefined : await deps.store.get(holder);
      if (holder === undefined || op === undefined || !FINISHED.includes(op.state)) continue;
      deps.logger.warn({ op: op.id, cluster: cluster.name, state: op.state }, 'releasing the lock of a finished operation');
      await deps.lock.release(cluster.name, holder);
    }
    for (const op of await deps.store.listRecent(RECENT)) {
      if (awaitsPosting(op)) await deps.audit.flush(op.id);
      const cluster = deps.inventory.clusters.find((c) => c.name === op.cluster);
      if (deps.playbooks(op.kind) === undefined || !needsRun(op, cluster, deps.clock.now()) || (await deps.runLease.held(op.id))) continue;
      const jobId = runJobId(op.id, 'resume');
      const previous = await deps.opsQueue.getJob(jobId);
      if (previous !== undefined) {
        // One resume at a time; a finished one makes room for the next.
        if (!(await previous.isCompleted()) && !(await previous.isFailed())) continue;
        await previous.remove();
      }
      deps.logger.warn({ op: op.id, cluster: op.cluster, state: op.state }, 'operation had no run; resuming it');
      await enqueueRun(deps.opsQueue, op.id, 'resume');
    }
  };
}
