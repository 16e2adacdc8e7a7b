import { UnrecoverableError } from 'bullmq';
import { ERROR_CODES, errorCode, type CodedError, type ErrorCode } from '../errors.ts';

/**
 * A coded error whose entry in the error table says trying again cannot help, as BullMQ reads it:
 * an `UnrecoverableError` fails the job at once, whatever attempts it has left. It keeps the
 * original's code, name, message and stack, so logs and the drain checkpoint read it the same.
 */
export class NotRetried extends UnrecoverableError implements CodedError {
  readonly code: ErrorCode;
  readonly retryable = false;

  constructor(error: Error, code: ErrorCode) {
    super(error.message);
    this.name = error.name;
    this.code = code;
    this.cause = error;
    if (error.stack !== undefined) this.stack = error.stack;
  }
}

/**
 * The error a processor threw, as BullMQ is to see it: the error table's `retryable` decides
 * whether the job's remaining attempts run. Errors without a code of the bot (Redis or Slack
 * away) are left as they are, retried as their job's options say.
 */
export function retryDecision(error: unknown): unknown {
  if (error instanceof UnrecoverableError) return error;
  const code = errorCode(error);
  if (code === undefined || ERROR_CODES[code].retryable) return error;
  return new NotRetried(error as Error, code);
}
