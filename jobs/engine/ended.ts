import type { Job } from 'bullmq';
import { errorText } from '../../src/chat/error-text.ts';
import { maintenanceRecordMarkdown } from '../../src/chat/maintenance-record.ts';
import { FINISHED } from '../../src/ops/state-machine.ts';
import type { Operation } from '../../src/ops/operation.ts';
import type { OperationJobData } from '../../src/queue/job-schemas.ts';
import type { OpsJobDeps } from './job-context.ts';
import type { Playbook } from './playbook.ts';

/**
 * After an operation ended (completed, stopped, cancelled, expired): its maintenance record in
 * its thread, whatever the ending, for every operation that started; then the playbook gives
 * back what it kept on disk. A job, so a Slack outage is retried and never fails the operation.
 */
export function createEndedJob(deps: OpsJobDeps, playbooks: Readonly<Partial<Record<Operation['kind'], Playbook>>>) {
  return async (job: Job<OperationJobData>): Promise<void> => {
    const { opId } = job.data;
    const op = await deps.store.get(opId);
    if (op === undefined) return;
    const playbook = playbooks[op.kind];
    if (op.startedAt !== undefined && op.rootTs !== undefined && [...FINISHED, 'failed'].includes(op.state)) {
      const appendix = await playbook?.recordAppendix?.(deps, op);
      await deps.chat
        .upload(op.channel, op.rootTs, {
          filename: `${op.id}-maintenance-record.md`,
          title: `Maintenance record ${op.id} (${op.state})`,
          content: maintenanceRecordMarkdown(op, appendix, deps.presentations(op.kind)),
        })
        .catch((error: unknown) => deps.logger.warn({ op: op.id, err: errorText(error) }, 'maintenance record not attached'));
    }
    // A stopped one can still be retried, so it keeps what it holds.
    if (FINISHED.includes(op.state)) await playbook?.ended?.(deps, op);
  };
}
