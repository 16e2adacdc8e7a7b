import { UnrecoverableError } from 'bullmq';
import { ERROR_CODES, type CodedError } from '../../src/errors.ts';

/**
 * A stored operation whose kind no playbook runs (a record of another version, or written by
 * hand): the engine touches nothing of it, and no retry can help, so the job fails at once.
 */
export class UnknownKindError extends UnrecoverableError implements CodedError {
  readonly code = 'kind-unknown';
  readonly retryable = ERROR_CODES['kind-unknown'].retryable;

  constructor(opId: string, kind: string) {
    super(`operation ${opId} is of kind ${kind}, which no playbook runs: nothing was changed, and the job is not tried again`);
    this.name = 'UnknownKindError';
  }
}
