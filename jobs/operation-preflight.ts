import type { Job } from 'bullmq';
import { errorText } from '../src/chat/error-text.ts';
import { operationRootMessage } from '../src/chat/upgrade-messages.ts';
import type { ClusterSession } from '../src/cluster/cluster-session.ts';
import type { ClusterConfig } from '../src/config/inventory.ts';
import type { Operation, Step } from '../src/ops/operation.ts';
import { OperationJobData, type OpsJobName } from '../src/queue/job-schemas.ts';
import { clusterNamed, type OpsJobDeps } from './job-context.ts';
import { newNonce } from './operation-walk.ts';

/** What a preflight found: refusals (collected, not stopped at the first), notes for the plan, and the steps. */
export interface PreflightOutcome {
  refusals: string[];
  notes: string[];
  steps: Step[];
  target: Partial<Operation['target']>;
  /** Production upgrades: the staging operation that rehearsed the same target, if any. */
  rehearsal?: Operation['rehearsal'];
}

export type PreflightCheck = (cluster: ClusterConfig, op: Operation, session: ClusterSession, signal?: AbortSignal) => Promise<PreflightOutcome>;

/**
 * What a passed preflight becomes: a plan that waits for an operator's Start, or, for the
 * commands where the operator's request is the start, an operation that takes the cluster's
 * lock now and runs up to its approval.
 */
export type OnPass = { kind: 'plan' } | { kind: 'run'; job: OpsJobName };

/** A preflight job: touches nothing; posts the refusal, or the plan. */
export function createPreflightJob(deps: OpsJobDeps, check: PreflightCheck, onPass: OnPass) {
  return async (job: Job, signal?: AbortSignal): Promise<void> => {
    const { opId } = OperationJobData.parse(job.data);
    const op = await deps.store.get(opId);
    if (!op || op.state !== 'preflight') return;
    const cluster = clusterNamed(deps.inventory, op.cluster);
    let outcome: PreflightOutcome;
    try {
      outcome = await deps.access.withSession(cluster, signal, (session) => check(cluster, op, session, signal));
    } catch (error) {
      outcome = { refusals: [`preflight could not complete: ${errorText(error)}`], notes: [], steps: [], target: {} };
    }
    if (outcome.refusals.length === 0 && onPass.kind === 'run') {
      const lock = await deps.lock.acquire(cluster.name, opId);
      if (!lock.ok) outcome.refusals.push(`operation ${lock.heldBy} holds ${cluster.name}; wait for it to finish, or \`/talos cancel ${lock.heldBy}\``);
    }
    const refused = outcome.refusals.length > 0;
    const now = deps.now().toISOString();
    const { op: decided } = await deps.store.update(opId, (o) => ({
      ...o,
      state: refused ? 'refused' : onPass.kind === 'plan' ? 'planned' : 'running',
      refusals: outcome.refusals,
      notes: outcome.notes,
      steps: outcome.steps,
      target: { ...o.target, ...outcome.target },
      planNonce: !refused && onPass.kind === 'plan' ? newNonce() : undefined,
      rehearsal: outcome.rehearsal,
      // The operator's request is the start of these operations.
      startedBy: !refused && onPass.kind === 'run' ? o.requestedBy : o.startedBy,
      startedAt: !refused && onPass.kind === 'run' ? now : o.startedAt,
      endedAt: refused ? now : undefined,
    }));
    const message = operationRootMessage(decided);
    if (decided.rootTs === undefined) {
      const { ts } = await deps.chat.post(decided.channel, message);
      await deps.store.update(opId, (o) => ({ ...o, rootTs: ts }));
    } else {
      await deps.chat.update(decided.channel, decided.rootTs, message);
    }
    await deps.audit.record(opId, {
      actor: 'bot',
      event: refused ? 'preflight refused' : 'preflight passed, plan posted',
      detail: refused ? decided.refusals.join('; ') : `${decided.steps.length} steps`,
    });
    if (!refused && onPass.kind === 'run') {
      await deps.opsQueue.add(onPass.job, { opId }, { jobId: `${opId}-run`, removeOnComplete: 1000, removeOnFail: 1000 });
    }
  };
}
